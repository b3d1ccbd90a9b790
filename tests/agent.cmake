# SPDX-License-Identifier: MIT
# `execbox agent`: its wire formats without a network (unit/), and the whole program against the
# scripted LLM server in tests/fakes/fake_llm.py for both providers (integration/).
pkg_check_modules(AGENT_CURL REQUIRED IMPORTED_TARGET libcurl)
add_executable(test_agent_provider unit/test_agent_provider.c
               ${PROJECT_SOURCE_DIR}/src/agent/provider.c ${PROJECT_SOURCE_DIR}/src/agent/http.c)
target_include_directories(test_agent_provider PRIVATE ${PROJECT_SOURCE_DIR}/src
                                                       ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(test_agent_provider PRIVATE PkgConfig::CMOCKA PkgConfig::JANSSON
                                                  PkgConfig::AGENT_CURL)
add_test(NAME unit.agent_provider COMMAND test_agent_provider)
set_tests_properties(unit.agent_provider PROPERTIES TIMEOUT 60)

eb_integration_test(agent)
