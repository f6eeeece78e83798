// Clang's thread-safety annotations (-Wthread-safety): a member declared
// GUARDED_BY(mu) may be touched only with `mu` held, a function declared
// REQUIRES(mu) is called only with it held, and the compiler checks both
// (the clang builds of scripts/test.sh, with -Werror). Under other
// compilers the macros expand to nothing. The lock types that carry them
// are in core/mutex.h (libstdc++'s std::mutex has none).
// Thread-safety: declarations only. Ownership: none.
#pragma once

#if defined(__clang__)
#define PROFWATCH_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define PROFWATCH_THREAD_ANNOTATION(x)
#endif

// A type whose objects are locks (core::Mutex).
#define CAPABILITY(x) PROFWATCH_THREAD_ANNOTATION(capability(x))
// An RAII type that holds a lock for its scope (core::MutexLock).
#define SCOPED_CAPABILITY PROFWATCH_THREAD_ANNOTATION(scoped_lockable)
// A data member read or written only with the lock held.
#define GUARDED_BY(x) PROFWATCH_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is read or written only with the lock held.
#define PT_GUARDED_BY(x) PROFWATCH_THREAD_ANNOTATION(pt_guarded_by(x))
// A function called with the lock held (the *Locked methods).
#define REQUIRES(...) PROFWATCH_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// A function called without the lock (it takes it itself).
#define EXCLUDES(...) PROFWATCH_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that takes / releases the lock and returns holding / not.
#define ACQUIRE(...) PROFWATCH_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) PROFWATCH_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// A function that checks at run time that the lock is held.
#define ASSERT_CAPABILITY(x) PROFWATCH_THREAD_ANNOTATION(assert_capability(x))
// A function the analysis does not check (say why at its use).
#define NO_THREAD_SAFETY_ANALYSIS PROFWATCH_THREAD_ANNOTATION(no_thread_safety_analysis)
