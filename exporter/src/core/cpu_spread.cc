#include "core/cpu_spread.h"

#include <sched.h>

namespace profwatch {

int CurrentCpu() { return sched_getcpu(); }

int MoveOffCpu(int cpu) {
  if (cpu < 0 || sched_getcpu() != cpu) return -1;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0) return -1;
  // Setting a mask without the current CPU migrates the thread before the
  // call returns; restoring the old mask does not move it back.
  if (sched_setaffinity(0, sizeof others, &others) != 0) return -1;
  const int moved_to = sched_getcpu();
  sched_setaffinity(0, sizeof allowed, &allowed);
  return moved_to;
}

}  // namespace profwatch
