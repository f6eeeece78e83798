// profwatch-serve: the daemon's executable. `profwatch serve ARGS` execs
// `profwatch-serve ARGS` (see main.cc); run directly it is the same.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/heap_tuning.h"

int main(int argc, char** argv) {
  profwatch::KeepBuffersInHeap();  // see core/heap_tuning.h
  return profwatch::cli::RunServe(std::vector<std::string>(argv + 1, argv + argc));
}
