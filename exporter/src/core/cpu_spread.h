// Keeps a producer thread off its consumer's CPU at start.
//
// A new thread starts on its creator's CPU, and while the two hand buffers
// back and forth through futex wake-ups the kernel can keep waking each one
// where the other just ran: on a loaded or small last-level cache domain
// (2 vCPUs here) it does not scan for an idle CPU, so both threads share one
// CPU with the other idle until periodic load balancing separates them.
// Measured with `perf sched` on the 1e5-event benchmark file: 20 ms of a 45 ms
// analysis ran on one CPU. Moving the new thread once is enough: each thread
// then sleeps and wakes on its own CPU.
#pragma once

namespace profwatch {

// The CPU the calling thread runs on, or -1 when unknown.
int CurrentCpu();

// If the calling thread runs on `cpu` and may run on another CPU, moves it to
// one of those, then gives it back the affinity it had (so the scheduler is
// free again from there). Returns the CPU it ran on while kept off `cpu`, or
// -1 when it was not moved.
int MoveOffCpu(int cpu);

}  // namespace profwatch
