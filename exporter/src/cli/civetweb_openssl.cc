// Debian 12's civetweb (1.15, built for OpenSSL 1.1's API) loads OpenSSL at
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
#include <dlfcn.h>

#include <cstring>

#include "cli/http_server.h"

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

namespace profwatch::cli {

bool CivetwebOpenSslShimLinked() {
  return RealDlopen() != nullptr &&
         dlsym(dlopen("libssl.so", RTLD_LAZY), "SSL_get_peer_certificate") != nullptr;
}

}  // namespace profwatch::cli
