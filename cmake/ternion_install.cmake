# Install rules, the ternionConfig.cmake package (find_package(ternion)) and the CPack .deb.
# Layout under the prefix:
#   bin/ternion                                 the CLI
#   lib/libternion_*.a, lib/cmake/ternion/      the libraries and their CMake package
#   include/ternion/{sim,neuron,...}/*.hpp      public headers
#   share/ternion/profiles/*.json               hardware profiles
#   share/ternion/bundled/*                     bundled models and test set
#   share/ternion/plot_trace.py                 trace plotting script
#   share/ternion/plot_mesh.py                  mesh placement figure (uses plot_trace.py)
#   share/doc/ternion/                          README, LICENSE, docs/
#   lib/python3[.X]/dist-packages/ternion/      the Python package and its extension module
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TERNION_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/ternion")
set(TERNION_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/ternion")
# Debian's python3 reads /usr/lib/python3/dist-packages (packages) and
# /usr/local/lib/python3.X/dist-packages (local installs, e.g. the default prefix).
set(TERNION_PYTHON_INSTALL_DIR "" CACHE STRING
    "Where the Python package is installed, relative to the prefix (empty: Debian's place for the prefix)")
if(TERNION_PYTHON_INSTALL_DIR)
    set(TERNION_PYTHON_DIR "${TERNION_PYTHON_INSTALL_DIR}")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR NOT TERNION_PYTHON_VERSION)
    set(TERNION_PYTHON_DIR "lib/python3/dist-packages")
else()
    set(TERNION_PYTHON_DIR "lib/python${TERNION_PYTHON_VERSION}/dist-packages")
endif()

install(TARGETS ternion_options ternion_simd ternion_kernels ternion_core ternion_io ternion_inputs ternion_synaptic
                ternion_sim ternion_neuron ternion_neuron_fixed ternion_attention_spiking ternion_attention_ann
                ternion_analysis ternion_attention ternion_hw ternion_chip
                ternion_models ternion_all
        EXPORT ternionTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ternion RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_dir sim neuron attention hw models)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ternion/${_dir}
            FILES_MATCHING PATTERN "*.hpp"
            PATTERN "profiles" EXCLUDE PATTERN "chips" EXCLUDE PATTERN "bundled" EXCLUDE)
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hw/profiles/ DESTINATION ${TERNION_INSTALL_DATADIR}/profiles
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hw/chips/ DESTINATION ${TERNION_INSTALL_DATADIR}/chips
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/bundled/ DESTINATION ${TERNION_INSTALL_DATADIR}/bundled)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/plot_trace.py ${PROJECT_SOURCE_DIR}/tools/plot_mesh.py
        DESTINATION ${TERNION_INSTALL_DATADIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
if(TERNION_PYTHON)
    install(TARGETS ternion_python LIBRARY DESTINATION ${TERNION_PYTHON_DIR}/ternion)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/ternion DESTINATION ${TERNION_PYTHON_DIR}
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)

install(EXPORT ternionTargets NAMESPACE ternion:: DESTINATION ${TERNION_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ternionConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ternionConfig.cmake
                              INSTALL_DESTINATION ${TERNION_INSTALL_CMAKEDIR}
                              PATH_VARS TERNION_INSTALL_DATADIR)
# 0.x: minor versions may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ternionConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ternionConfig.cmake
              ${PROJECT_BINARY_DIR}/ternionConfigVersion.cmake
        DESTINATION ${TERNION_INSTALL_CMAKEDIR})

if(PROJECT_IS_TOP_LEVEL)
    set(CPACK_PACKAGE_NAME ternion)
    set(CPACK_PACKAGE_VENDOR ternion)
    set(CPACK_PACKAGE_CONTACT "ternion maintainers <ternion@localhost>")
    set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
        "Event-driven simulator and energy model for spiking neural networks and Transformers")
    set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
    set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
    set(CPACK_GENERATOR DEB)
    set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
    set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
    set(CPACK_DEBIAN_PACKAGE_SECTION science)
    # Debian 12 runtime packages of what the CLI links (readelf -d: NEEDED); the -dev packages
    # are only needed to build against the installed libraries (find_package), hence Suggests.
    set(CPACK_DEBIAN_PACKAGE_DEPENDS
        "libc6, libstdc++6, libgcc-s1, zlib1g, libhdf5-103-1, libtbb12, libboost-program-options1.74.0, libssl3")
    if(TERNION_FFTW)
        string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libfftw3-single3")
    endif()
    set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-numpy, python3-h5py, dataset-fashion-mnist")
    set(CPACK_DEBIAN_PACKAGE_SUGGESTS
        "python3-matplotlib, libeigen3-dev, libtbb-dev, libhdf5-dev, nlohmann-json3-dev")
    include(CPack)
endif()
