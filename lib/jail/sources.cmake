# SPDX-License-Identifier: MIT
# The jail backend's internals (lib/jail/). Each part appends its own sources.
list(APPEND EB_LIB_SOURCES jail/seccomp.c jail/landlock.c)
# The jail backend itself: namespaces and ids, mounts, cgroups, and the backend table.
list(APPEND EB_LIB_SOURCES backends/jail.c jail/ns.c jail/mounts.c jail/cgroup.c jail/netns.c jail/prewarm.c)
list(APPEND EB_LIB_DEFINES HAVE_JAIL)

# The syscall filter is compiled at build time: eb_seccomp_gen builds the rules of
# jail/seccomp.c with libseccomp and writes the BPF program into seccomp_bpf.h, which the
# library's jail/seccomp.c includes. A run neither compiles the filter nor loads libseccomp.
# eb_seccomp_compiler: the rules and libseccomp, for the generator and for the test that checks
# the library's program against a fresh compile.
add_library(eb_seccomp_compiler OBJECT jail/seccomp.c)
target_compile_definitions(eb_seccomp_compiler PRIVATE EB_SECCOMP_COMPILER)
target_include_directories(eb_seccomp_compiler PUBLIC ${PROJECT_SOURCE_DIR}/include
                                                      ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(eb_seccomp_compiler PUBLIC PkgConfig::SECCOMP)
add_executable(eb_seccomp_gen jail/seccomp_gen.c error.c util.c)
target_link_libraries(eb_seccomp_gen PRIVATE eb_seccomp_compiler)
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/seccomp_bpf.h
                   COMMAND eb_seccomp_gen ${CMAKE_CURRENT_BINARY_DIR}/seccomp_bpf.h
                   DEPENDS eb_seccomp_gen
                   COMMENT "Compiling the jail's seccomp filter to BPF")
list(APPEND EB_LIB_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/seccomp_bpf.h)
include_directories(${CMAKE_CURRENT_BINARY_DIR})
