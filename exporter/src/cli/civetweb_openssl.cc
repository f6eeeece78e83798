// Debian 12's civetweb (1.15, built for OpenSSL 1.1's API) loads OpenSSL at
// run time: dlopen("libssl.so") and dlopen("libcrypto.so"), the unversioned
// names that only the -dev package installs, then dlsym for each function
// it uses. OpenSSL 3 no longer exports SSL_get_peer_certificate (it became
// SSL_get1_peer_certificate), so that look-up yields null and civetweb's
// worker calls it on every HTTPS connection after the handshake: a crash.
//
// profwatch links OpenSSL 3 itself, so the executable answers those look-ups
// for civetweb (a definition in the executable comes first in the global
// scope): the two libraries by their versioned names, which are the copies
// already loaded, and the renamed function by its new name (same contract:
// a new reference the caller frees). Every other call goes to the C
// library's functions unchanged.
#include <dlfcn.h>
#include <openssl/ssl.h>

#include <cstring>

#include "cli/http_server.h"

namespace {

using DlopenFn = void* (*)(const char*, int);
using DlsymFn = void* (*)(void*, const char*);

DlopenFn RealDlopen() {
  static const DlopenFn fn = reinterpret_cast<DlopenFn>(dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34"));
  return fn;
}

DlsymFn RealDlsym() {
  static const DlsymFn fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
  return fn;
}

}  // namespace

extern "C" void* dlopen(const char* file, int mode) noexcept {
  if (file != nullptr && std::strcmp(file, "libssl.so") == 0) file = "libssl.so.3";
  if (file != nullptr && std::strcmp(file, "libcrypto.so") == 0) file = "libcrypto.so.3";
  return RealDlopen()(file, mode);
}

extern "C" void* dlsym(void* handle, const char* name) noexcept {
  if (std::strcmp(name, "SSL_get_peer_certificate") == 0) {
    return reinterpret_cast<void*>(&SSL_get1_peer_certificate);
  }
  return RealDlsym()(handle, name);
}

namespace profwatch::cli {

bool CivetwebOpenSslShimLinked() { return RealDlopen() != nullptr && RealDlsym() != nullptr; }

}  // namespace profwatch::cli
