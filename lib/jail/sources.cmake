# SPDX-License-Identifier: MIT
# The jail backend's internals (lib/jail/). Each part appends its own sources.
list(APPEND EB_LIB_SOURCES jail/seccomp.c jail/landlock.c)
# The jail backend itself: the backend table and a sandbox's assembly (backends/jail.c), its
# probe (backends/jail_probe.c); namespaces and ids, mounts, cgroups, the sandbox's init and life
# cycle, the stage, workspaces, templates and network "allow" (jail/).
list(APPEND EB_LIB_SOURCES backends/jail.c backends/jail_probe.c
                           jail/ns.c jail/mounts.c jail/cgroup.c jail/cgroup_detect.c jail/netns.c jail/prewarm.c
                           jail/cache.c jail/mntpin.c jail/sdscope.c jail/uidpool.c
                           jail/box.c jail/child.c jail/stage.c jail/hostws.c jail/tmpfs.c
                           jail/reaper.c jail/proxyrun.c jail/tplclient.c
                           jail/netproxy.c jail/netproxy_http.c jail/netproxy_dns.c
                           jail/tlshello.c)
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
add_executable(eb_seccomp_gen jail/seccomp_gen.c base/error.c base/util.c)
target_link_libraries(eb_seccomp_gen PRIVATE eb_seccomp_compiler)
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/seccomp_bpf.h
                   COMMAND eb_seccomp_gen ${CMAKE_CURRENT_BINARY_DIR}/seccomp_bpf.h
                   DEPENDS eb_seccomp_gen
                   COMMENT "Compiling the jail's seccomp filter to BPF")
list(APPEND EB_LIB_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/seccomp_bpf.h)
include_directories(${CMAKE_CURRENT_BINARY_DIR})

# Templates (lib/core/template.c): a helper module the template's interpreter loads, and the init
# program of each run forked from it. Both are built on their own, without sanitizers (they run
# inside the sandbox, in an interpreter or as pid 1), from the libc-only parts of the library,
# and embedded into it (tpl_blobs.c).
set(EB_TPL_OUT ${CMAKE_CURRENT_BINARY_DIR}/tpl)
add_library(execbox_tpl_helper MODULE jail/tpl_helper.c proc/childlib.c base/error.c
                                      base/util.c jail/ns.c jail/landlock.c)
# The init is exec'd once per run: with musl where musl-gcc is there (musl-tools), since a static
# glibc program's start-up reads the CPU's cache geometry with CPUID, which traps to the
# hypervisor on a virtual machine: 0.6 ms of CPU per run on this project's CI machines, where
# musl's start-up takes 0.05 ms (docs/pool.md). Without musl-gcc, glibc as the helper's.
find_program(EB_MUSL_GCC musl-gcc)
set(EB_TPL_INIT_SOURCES jail/tpl_init.c proc/childlib.c base/error.c base/util.c)
if(EB_MUSL_GCC)
  # musl has no kernel headers of its own: a directory with Linux's uapi ones (linux, asm,
  # asm-generic), searched after musl's own.
  set(kh ${CMAKE_CURRENT_BINARY_DIR}/musl-kernel-headers)
  file(MAKE_DIRECTORY ${kh})
  foreach(d linux asm-generic)
    file(CREATE_LINK /usr/include/${d} ${kh}/${d} SYMBOLIC)
  endforeach()
  if(EXISTS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/asm)
    file(CREATE_LINK /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/asm ${kh}/asm SYMBOLIC)
  else()
    file(CREATE_LINK /usr/include/asm ${kh}/asm SYMBOLIC)
  endif()
  list(TRANSFORM EB_TPL_INIT_SOURCES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  file(GLOB eb_tpl_init_headers ${CMAKE_CURRENT_SOURCE_DIR}/proc/*.h ${CMAKE_CURRENT_SOURCE_DIR}/base/*.h
       ${PROJECT_SOURCE_DIR}/include/execbox/*.h)
  add_custom_command(OUTPUT ${EB_TPL_OUT}/init
    COMMAND ${CMAKE_COMMAND} -E make_directory ${EB_TPL_OUT}
    COMMAND ${EB_MUSL_GCC} -D_GNU_SOURCE -std=gnu11 -O2 -Wall -Wextra -Werror
            -Wno-format-truncation -Wno-missing-field-initializers
            -I${PROJECT_SOURCE_DIR}/include -I${CMAKE_CURRENT_SOURCE_DIR} -idirafter ${kh}
            -ffunction-sections -fdata-sections -fstack-protector-strong
            ${EB_TPL_INIT_SOURCES} -static -Wl,--gc-sections -s -o ${EB_TPL_OUT}/init
    DEPENDS ${EB_TPL_INIT_SOURCES} ${eb_tpl_init_headers}
    COMMENT "The templates' init, with musl" VERBATIM)
  add_custom_target(execbox_tpl_init DEPENDS ${EB_TPL_OUT}/init)
  set(eb_tpl_cc_targets execbox_tpl_helper)
else()
  add_executable(execbox_tpl_init ${EB_TPL_INIT_SOURCES})
  set(eb_tpl_cc_targets execbox_tpl_helper execbox_tpl_init)
endif()
foreach(t ${eb_tpl_cc_targets})
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(${t} PRIVATE -fno-sanitize=all -fvisibility=hidden -O2
                                      -ffunction-sections -fdata-sections)
  target_link_options(${t} PRIVATE -fno-sanitize=all -Wl,--gc-sections -s)
  set_target_properties(${t} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${EB_TPL_OUT}
                                        RUNTIME_OUTPUT_DIRECTORY ${EB_TPL_OUT} PREFIX "")
endforeach()
set_target_properties(execbox_tpl_helper PROPERTIES OUTPUT_NAME helper SUFFIX ".so")
if(NOT EB_MUSL_GCC)
  set_target_properties(execbox_tpl_init PROPERTIES OUTPUT_NAME init)
  target_link_options(execbox_tpl_init PRIVATE -static)
endif()
list(APPEND EB_LIB_SOURCES jail/tpl_blobs.c)
set_source_files_properties(jail/tpl_blobs.c PROPERTIES
  COMPILE_DEFINITIONS "EB_TPL_HELPER_PATH=\"${EB_TPL_OUT}/helper.so\";EB_TPL_INIT_PATH=\"${EB_TPL_OUT}/init\""
  OBJECT_DEPENDS "${EB_TPL_OUT}/helper.so;${EB_TPL_OUT}/init")
set(EB_LIB_DEPENDS execbox_tpl_helper execbox_tpl_init)
