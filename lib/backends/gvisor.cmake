# SPDX-License-Identifier: MIT
# The gvisor backend: runsc (gVisor) on an OCI bundle built per run. It reuses the jail's /etc
# staging, so it is built with the jail; runsc itself is found at run time (Debian: runsc).
if("HAVE_JAIL" IN_LIST EB_LIB_DEFINES)
  list(APPEND EB_LIB_SOURCES backends/gvisor.c)
  list(APPEND EB_LIB_DEFINES HAVE_GVISOR)
endif()
