# Warnings, sanitizers and shared compile settings, applied through one interface target.
add_library(ternion_options INTERFACE)
target_compile_options(ternion_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow=local
                       -Wno-unused-parameter)
if(TERNION_WERROR)
    target_compile_options(ternion_options INTERFACE -Werror)
endif()
if(TERNION_SANITIZE)
    string(REPLACE ";" "," _san "${TERNION_SANITIZE}")
    target_compile_options(ternion_options INTERFACE -fsanitize=${_san} -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)
    target_link_options(ternion_options INTERFACE -fsanitize=${_san})
endif()
# Eigen must not start threads of its own: oneTBB owns parallelism.
target_compile_definitions(ternion_options INTERFACE EIGEN_DONT_PARALLELIZE
                           TERNION_VERSION="${PROJECT_VERSION}" TERNION_GIT_REV="${TERNION_GIT_REV}"
                           TERNION_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
