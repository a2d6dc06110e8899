# Installs a kiln build into a scratch prefix, builds examples/hello against the installed package
# and runs it: the whole path an application developer takes. The other examples (gpt2, mlp) are
# built the same way, so that their own CMakeLists.txt keep working; ctest runs them on every
# device from kiln's build (`example <name> on <device>`). Run by ctest as
# `install_and_build_example`; any failing step fails the test.
#
#   cmake -DKILN_BUILD_DIR=<build> -DKILN_SOURCE_DIR=<source> -DWORK_DIR=<scratch>
#         [-DCONFIG=<config>] [-DCXX_COMPILER=<c++>] [-DCXX_FLAGS=<flags>] -P install_test.cmake

cmake_minimum_required(VERSION 3.20)

foreach(var KILN_BUILD_DIR KILN_SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "install_test.cmake: pass -D${var}=...")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(example_build ${WORK_DIR}/hello-build)
set(other_examples gpt2 mlp)
set(cache_dir ${WORK_DIR}/kernel-cache)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${cache_dir})

# Runs one step; stops the test with its output when the step fails.
function(step name)
  message(STATUS "install_test: ${name}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result COMMAND_ECHO STDOUT)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "install_test: '${name}' failed (${result})")
  endif()
endfunction()

set(config_args)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()

step("install the build into ${prefix}"
  ${CMAKE_COMMAND} --install ${KILN_BUILD_DIR} --prefix ${prefix} ${config_args})

set(configure_args -DCMAKE_PREFIX_PATH=${prefix})
if(CONFIG)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${CONFIG})
endif()
if(CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(CXX_FLAGS)
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
endif()
step("configure examples/hello against the installed package"
  ${CMAKE_COMMAND} -S ${KILN_SOURCE_DIR}/examples/hello -B ${example_build} ${configure_args})
step("build examples/hello"
  ${CMAKE_COMMAND} --build ${example_build} ${config_args})
foreach(example ${other_examples})
  step("configure examples/${example} against the installed package"
    ${CMAKE_COMMAND} -S ${KILN_SOURCE_DIR}/examples/${example} -B ${WORK_DIR}/${example}-build
    ${configure_args})
  step("build examples/${example}"
    ${CMAKE_COMMAND} --build ${WORK_DIR}/${example}-build ${config_args})
endforeach()

# Only the installed tree may be used: plugins must be found beside the installed libkiln.
set(run_env ${CMAKE_COMMAND} -E env --unset=KILN_PLUGIN_PATH KILN_CACHE_DIR=${cache_dir})

set(hello_exe ${example_build}/hello)
if(NOT EXISTS ${hello_exe} AND CONFIG)
  set(hello_exe ${example_build}/${CONFIG}/hello)  # multi-config generators
endif()
if(NOT EXISTS ${hello_exe})
  message(FATAL_ERROR "install_test: the built example is not in ${example_build}")
endif()
step("run the example" ${run_env} ${hello_exe})

# The installed tool, when it was built, must find the installed plugins too.
if(EXISTS ${prefix}/bin/kiln)
  step("run the installed tool: kiln devices" ${run_env} ${prefix}/bin/kiln devices)
endif()

message(STATUS "install_test: passed")
