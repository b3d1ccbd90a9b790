# SPDX-License-Identifier: MIT
# `execbox repl`: a Python session in the terminal, with line editing from libedit (BSD
# licensed, Debian's libedit-dev). A program of its own (execbox-repl) that `execbox repl`
# executes, so that `execbox run` never loads libedit and its terminal libraries.
pkg_check_modules(LIBEDIT REQUIRED IMPORTED_TARGET libedit)
eb_program(execbox_repl execbox-repl
  SOURCES repl/main.c repl/repl.c repl/cell.c
  LIBS PkgConfig::LIBEDIT)
list(APPEND EB_CLI_DEFINES HAVE_REPL)
