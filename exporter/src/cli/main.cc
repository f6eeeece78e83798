// profwatch entry point: dispatches to the analyze / serve / compare commands.
// Only this file picks exit codes.
#include <cstdio>
#include <string_view>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: profwatch analyze|serve|compare ...\n");
    return 2;
  }
  std::fprintf(stderr, "profwatch: unknown command '%s'\n", argv[1]);
  return 2;
}
