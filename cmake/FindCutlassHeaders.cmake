# Locate CUTLASS 4.2 headers (never committed). First found of:
#   1. -DNVFP4_CUTLASS_DIR=<root with include/cutlass>
#   2. a populated extern/cutlass
#   3. an installed `nvidia-cutlass` wheel (cutlass_library/source/include)
#   4. `pip download nvidia-cutlass==4.2.0.0` into the build tree (needs PyPI)
set(NVFP4_CUTLASS_WHEEL_VERSION "4.2.0.0")

function(nvfp4_find_cutlass out_var)
  set(_candidates "")
  if(NVFP4_CUTLASS_DIR)
    list(APPEND _candidates "${NVFP4_CUTLASS_DIR}/include" "${NVFP4_CUTLASS_DIR}")
  endif()
  list(APPEND _candidates "${PROJECT_SOURCE_DIR}/extern/cutlass/include")
  foreach(c IN LISTS _candidates)
    if(EXISTS "${c}/cutlass/cutlass.h")
      set(${out_var} "${c}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  if(NVFP4_CUTLASS_DIR)
    message(FATAL_ERROR "NVFP4_CUTLASS_DIR=${NVFP4_CUTLASS_DIR} has no include/cutlass/cutlass.h")
  endif()

  find_package(Python 3.9 COMPONENTS Interpreter)
  if(Python_Interpreter_FOUND)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c
        "import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), 'source', 'include'))"
      OUTPUT_VARIABLE _wheel_inc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND EXISTS "${_wheel_inc}/cutlass/cutlass.h")
      set(${out_var} "${_wheel_inc}" PARENT_SCOPE)
      return()
    endif()

    set(_dl "${CMAKE_BINARY_DIR}/_cutlass_wheel")
    set(_inc "${_dl}/unpacked/cutlass_library/source/include")
    if(NOT EXISTS "${_inc}/cutlass/cutlass.h")
      message(STATUS "nvfp4: downloading nvidia-cutlass==${NVFP4_CUTLASS_WHEEL_VERSION} from PyPI for its headers")
      # -I: inside pip's isolated build environment the interpreter's own site-packages
      # (and so pip) are hidden behind PYTHONPATH; isolated mode ignores PYTHONPATH.
      foreach(_flag -I "")
        execute_process(
          COMMAND "${Python_EXECUTABLE}" ${_flag} -m pip download --no-deps --only-binary=:all:
                  "nvidia-cutlass==${NVFP4_CUTLASS_WHEEL_VERSION}" -d "${_dl}"
          RESULT_VARIABLE _rc)
        if(_rc EQUAL 0)
          break()
        endif()
      endforeach()
      file(GLOB _whl "${_dl}/nvidia_cutlass-*.whl")
      if(_rc EQUAL 0 AND _whl)
        file(ARCHIVE_EXTRACT INPUT "${_whl}" DESTINATION "${_dl}/unpacked"
             PATTERNS "cutlass_library/source/include/*")
      endif()
    endif()
    if(EXISTS "${_inc}/cutlass/cutlass.h")
      set(${out_var} "${_inc}" PARENT_SCOPE)
      return()
    endif()
  endif()
  message(FATAL_ERROR
    "CUTLASS headers not found. Pass -DNVFP4_CUTLASS_DIR=<cutlass root>, populate extern/cutlass, "
    "or install nvidia-cutlass==${NVFP4_CUTLASS_WHEEL_VERSION}.")
endfunction()
