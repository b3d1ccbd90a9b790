# SPDX-License-Identifier: MIT
# deploy/: the Kubernetes manifests validated offline against the API schemas (npm's
# kubernetes-models, pinned by tests/deploy/package-lock.json), and the container image built
# with podman from deploy/Containerfile and checked inside (label "image", run once by `make
# test-image`, which `make test` runs last: the first build on a machine makes a Debian base
# with debootstrap and installs the build and runtime packages, about 10 minutes on 2 busy
# cores; later builds reuse podman's cache in /var/cache/execbox-test: about 20 s unchanged,
# 2-3 minutes after a source change).
add_test(NAME deploy.kubernetes COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/deploy/run.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(deploy.kubernetes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME deploy.image COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/deploy/image.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(deploy.image PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1500 LABELS image
                     RUN_SERIAL TRUE)
