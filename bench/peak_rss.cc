// peak_rss: runs a command and writes its peak resident set size to a file,
// for bench/run.py. Measuring from Python itself is wrong: a child's
// ru_maxrss keeps the high-water mark of the address space it had before
// exec, and a child of Python starts as a copy of (or, with vfork, inside)
// the interpreter's. This small process forks a copy of itself instead.
//   peak_rss OUT_FILE COMMAND [ARG...]
// OUT_FILE gets "<peak RSS in KiB>\n"; the exit status is the command's
// (128 + signal if it was killed; 127 if it could not be started).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: peak_rss OUT_FILE COMMAND [ARG...]\n");
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("peak_rss: fork");
    return 127;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    std::perror("peak_rss: exec");
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      std::perror("peak_rss: wait4");
      return 127;
    }
  }
  if (FILE* out = std::fopen(argv[1], "w")) {
    std::fprintf(out, "%ld\n", usage.ru_maxrss);
    std::fclose(out);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
