# Finds the SASS tools of the compile-only kernel tests: cuobjdump (it must be from CUDA 13 or later, to read
# the cubins of nvcc/NVRTC 13) and the folder of nvdisasm (cuobjdump runs it). Looked up afresh at every
# configure (NO_CACHE): a build folder must not keep a tool that has since been removed or replaced (after a
# pip install swapped the wheels, a cached path pointed at Triton's CUDA 12.8 copy).
#
#   dg_find_sass_tools(<dir>...)  sets DG_CUOBJDUMP (a path, or "") and DG_NVDISASM_DIR (a folder, or "")
#                                 in the caller, searching the given folders first, then PATH.
#
# Script mode, for tests: cmake -DDG_TOOL_HINTS="dir1;dir2" -P cmake/DgSassTools.cmake prints both results.

# The major CUDA release of a cuobjdump ("... release 13.0, V13.0.88"), or 0 when it does not say.
function(dg_cuobjdump_major tool out)
  execute_process(COMMAND ${tool} --version OUTPUT_VARIABLE text ERROR_QUIET RESULT_VARIABLE rc)
  set(major 0)
  if(rc EQUAL 0 AND text MATCHES "release ([0-9]+)\\.")
    set(major ${CMAKE_MATCH_1})
  endif()
  set(${out} ${major} PARENT_SCOPE)
endfunction()

function(dg_find_sass_tools)
  set(dirs ${ARGN})
  if(DEFINED ENV{PATH})
    string(REPLACE ":" ";" path_dirs "$ENV{PATH}")
    list(APPEND dirs ${path_dirs})
  endif()
  set(cuobjdump "")
  foreach(dir IN LISTS dirs)
    if(EXISTS "${dir}/cuobjdump" AND NOT IS_DIRECTORY "${dir}/cuobjdump")
      dg_cuobjdump_major("${dir}/cuobjdump" major)
      if(major GREATER_EQUAL 13)
        set(cuobjdump "${dir}/cuobjdump")
        break()
      endif()
      message(STATUS "deep_gemm tests: skipping ${dir}/cuobjdump (CUDA ${major}; the tests need CUDA 13 or later)")
    endif()
  endforeach()
  find_program(nvdisasm nvdisasm HINTS ${ARGN} NO_CACHE)
  set(nvdisasm_dir "")
  if(nvdisasm)
    get_filename_component(nvdisasm_dir "${nvdisasm}" DIRECTORY)
  endif()
  set(DG_CUOBJDUMP "${cuobjdump}" PARENT_SCOPE)
  set(DG_NVDISASM_DIR "${nvdisasm_dir}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  dg_find_sass_tools(${DG_TOOL_HINTS})
  message("cuobjdump='${DG_CUOBJDUMP}' nvdisasm dir='${DG_NVDISASM_DIR}'")
endif()
