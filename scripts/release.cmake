# The self-contained release binary (ROCPLAY_STATIC_RELEASE, built by scripts/release.sh): the
# third-party libraries from Debian's static archives, fmt header-only (Debian ships no libfmt.a),
# libstdc++ and libgcc linked in. What is left is glibc, which must be 2.34 or newer where it
# runs; scripts/release.sh checks that no newer symbol version leaks in.

# fmt: the same headers, compiled into every user (FMT_HEADER_ONLY).
set(ROCPLAY_FMT fmt::fmt-header-only)

# yaml-cpp: libyaml-cpp.a with the headers yaml-cpp's package names.
find_library(ROCPLAY_YAML_CPP_STATIC NAMES libyaml-cpp.a REQUIRED)
get_target_property(_yaml_includes yaml-cpp INTERFACE_INCLUDE_DIRECTORIES)
add_library(rocplay_yaml_static INTERFACE)
target_link_libraries(rocplay_yaml_static INTERFACE ${ROCPLAY_YAML_CPP_STATIC})
if(_yaml_includes)
  target_include_directories(rocplay_yaml_static SYSTEM INTERFACE ${_yaml_includes})
endif()
set(ROCPLAY_YAML rocplay_yaml_static)

# elfutils' libelf.a needs zlib (its compressed sections); both static.
find_library(ROCPLAY_LIBELF NAMES libelf.a REQUIRED)
find_library(ROCPLAY_ZLIB_STATIC NAMES libz.a REQUIRED)
list(APPEND ROCPLAY_LIBELF ${ROCPLAY_ZLIB_STATIC})


# libstdc++ and libgcc into the executable; nothing but glibc stays dynamic.
# GCC 12's libgcc_eh needs _dl_find_object (glibc 2.35) and its libstdc++ arc4random (2.36); the
# binary brings its own of both, so that it starts on glibc 2.34 (scripts/release/glibc_compat.cpp).
function(rocplay_static_link target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/scripts/release/glibc_compat.cpp)
  set_source_files_properties(${PROJECT_SOURCE_DIR}/scripts/release/glibc_compat.cpp
                              PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
