// make sanitize preloads this into every process it runs (LD_PRELOAD, docs/build.md): dlclose() does
// nothing, so a shared object stays mapped until the process exits.
//
// Why: MPI_Finalize unloads Open MPI's components (mca_*.so). LeakSanitizer checks at exit, after that,
// so an allocation a component keeps (by design: the process's exit frees it) has an allocation stack of
// unmapped addresses, and tests/lsan_openmpi.supp, which matches leaks by library name, cannot match it.
// With the components still mapped, the innermost frames name them and ASan's fast frame-pointer
// unwinder is enough. The slow unwinder it replaces (fast_unwind_on_malloc=0) walked every malloc's
// whole stack through the DWARF tables: most of a sanitized multi-rank test's time (a zero_mpi test
// on 2 ranks, 22.0 s with it, 3.3 s without).
//
// Built without the sanitizers (it is preloaded into uninstrumented programs too: mpirun, python,
// chromium); instrumented programs accept a preload before ASan's runtime with verify_asan_link_order=0.
extern "C" int dlclose(void* handle) {
  (void)handle;
  return 0;
}
