# SPDX-License-Identifier: MIT
# The VM lane (tests/vm, docs/vm-lane.md): the built execbox checked inside qemu (TCG) on
# Debian's 6.1 and 6.12 kernels with pure cgroup v2, one boot per kernel x layout. Labels: `vm`
# on every test (`make test-vm`), `vm-quick` on the subset `make test` runs. Each boot keeps
# both cores busy, so the tests run alone (RUN_SERIAL). The dev build only: an ASan execbox
# under TCG is too slow to fit a deadline, and the lane is about the kernels, not the build.
# Exit 77 (skipped, with run.sh's reason): no qemu, no kernels (vm.setup could not fetch
# them), not root.
if(EXECBOX_SANITIZE)
  return()
endif()

set(EB_VM_DIR ${CMAKE_CURRENT_SOURCE_DIR}/vm)
set(EB_VM_ENV "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};EXECBOX_BUILD=${PROJECT_BINARY_DIR}")

# Fetches and unpacks the kernels and builds the initramfs once (later runs find them cached).
add_test(NAME vm.setup COMMAND ${EB_VM_DIR}/setup.sh --ctest)
set_tests_properties(vm.setup PROPERTIES LABELS "vm;vm-quick" SKIP_RETURN_CODE 77 TIMEOUT 900
  FIXTURES_SETUP vm RUN_SERIAL TRUE)

# Measured on 2 shared cores (docs/vm-lane.md): a boot with every check takes 1-3 min, with
# the jail walls suite 3-5 min; the deadlines leave twice that. run.sh's own deadline (the
# qemu kill) comes before ctest's.
set(EB_VM_QUICK "6.1.service;6.12.container;6.12.systemd-scope;6.1.root.walls")
foreach(k 6.1 6.12)
  foreach(l root service scope container systemd-service systemd-nodelegate systemd-scope)
    foreach(w "" ".walls")
      if(w AND NOT l MATCHES "^(root|service)$")
        continue()
      endif()
      set(name vm.${k}.${l}${w})
      if(w)
        set(args --walls)
        set(secs 1500)
      else()
        set(args)
        set(secs 720)
      endif()
      add_test(NAME ${name} COMMAND ${EB_VM_DIR}/lane.sh --kernel ${k} --layout ${l} ${args}
                                    --timeout ${secs})
      set(labels vm)
      if("${k}.${l}${w}" IN_LIST EB_VM_QUICK)
        list(APPEND labels vm-quick)
      endif()
      math(EXPR ctest_secs "${secs} + 120")
      set_tests_properties(${name} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77
        TIMEOUT ${ctest_secs} RUN_SERIAL TRUE RESOURCE_LOCK vm FIXTURES_REQUIRED vm
        ENVIRONMENT "${EB_VM_ENV}")
    endforeach()
  endforeach()
endforeach()
