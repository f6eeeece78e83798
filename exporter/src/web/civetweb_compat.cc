// Two things Debian 12's civetweb needs from the program that embeds it.
//
// 1. OpenSSL 3. Debian 12's civetweb (1.15, built for OpenSSL 1.1's API) loads OpenSSL at
// run time: dlopen("libssl.so") and dlopen("libcrypto.so"), the unversioned
// names that only the -dev package installs, then dlsym on those handles for
// each function it uses. OpenSSL 3 no longer exports SSL_get_peer_certificate
// (it became SSL_get1_peer_certificate), so that look-up yields null and
// civetweb's worker calls it on every HTTPS connection after the handshake.
//
// profwatch links OpenSSL 3 itself. The executable's dlopen (a definition in
// the executable comes first in the global scope, so civetweb's calls reach
// it) answers those two names with the main program's handle: its look-ups
// then search the executable and the libraries it links, where every OpenSSL
// function is (the copies already loaded), and the executable's own
// SSL_get_peer_certificate (exported for this, exporter/CMakeLists.txt)
// forwards to the new name: same contract, a new reference the caller frees.
// Every other dlopen goes to the C library's unchanged. dlsym is left alone
// (sanitizer runtimes call it before anything here is set up).
//
// 2. gmtime. civetweb 1.15 dates its own answers (408 to a client that sent
// half a request, 400, 413) with gmtime(), whose result lives in one buffer
// shared by the process, from whichever worker answers: two such answers at
// once race on it (ThreadSanitizer reports it; a Date header could be torn).
// The executable's gmtime keeps the result per thread, which POSIX allows
// and which callers that use it from one thread cannot tell apart.
//
// 3. accept. civetweb 1.15 has no callback when it accepts a connection,
// and none that names a connection's socket; the front door needs both to
// bound the connections without a request (web/http_server.h). The
// executable's accept is the C library's (accept4 without flags) and then
// hands the new socket and its peer to the running server, if any. Only
// civetweb's accept thread accepts in this program.
#include <dlfcn.h>
#include <sys/socket.h>

#include <cstring>
#include <ctime>

#include "web/http_server.h"

extern "C" {
struct ssl_st;
struct x509_st;
struct x509_st* SSL_get1_peer_certificate(const struct ssl_st* ssl);

struct x509_st* SSL_get_peer_certificate(const struct ssl_st* ssl) {
  return SSL_get1_peer_certificate(ssl);
}
}

namespace {

using DlopenFn = void* (*)(const char*, int);

DlopenFn RealDlopen() {
  static const DlopenFn fn = reinterpret_cast<DlopenFn>(dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34"));
  return fn;
}

}  // namespace

extern "C" void* dlopen(const char* file, int mode) noexcept {
  if (file != nullptr &&
      (std::strcmp(file, "libssl.so") == 0 || std::strcmp(file, "libcrypto.so") == 0)) {
    return RealDlopen()(nullptr, mode);
  }
  return RealDlopen()(file, mode);
}

extern "C" struct tm* gmtime(const time_t* t) noexcept {
  thread_local struct tm result;
  return gmtime_r(t, &result);
}

extern "C" int accept(int fd, sockaddr* __restrict addr, socklen_t* __restrict len) {
  const int conn = accept4(fd, addr, len, 0);
  if (conn >= 0 && addr != nullptr && len != nullptr) {
    profwatch::web::ConnectionAccepted(conn, addr, *len);
  }
  return conn;
}

namespace profwatch::web {

bool CivetwebOpenSslShimLinked() {
  return RealDlopen() != nullptr &&
         dlsym(dlopen("libssl.so", RTLD_LAZY), "SSL_get_peer_certificate") != nullptr;
}

}  // namespace profwatch::web
