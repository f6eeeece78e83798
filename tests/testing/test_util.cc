#include "testing/test_util.h"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace profwatch::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  std::string tmpl = (fs::temp_directory_path() / "profwatch-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Make everything writable again (tests chmod files to provoke EACCES).
  for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

void WriteFile(const std::string& path, std::string_view data) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Gzip(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  return out;
}

namespace {

// Raw deflate of `data` ending with `flush` (Z_FULL_FLUSH: byte-aligned, the
// dictionary reset, so the same input compresses to the same bytes again).
std::string RawDeflate(z_stream& zs, std::string_view data, int flush) {
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, flush);
  if (rc != Z_OK && rc != Z_STREAM_END) throw std::runtime_error("deflate");
  if (zs.avail_in != 0) throw std::runtime_error("deflate: output too small");
  out.resize(out.size() - zs.avail_out);
  return out;
}

}  // namespace

std::string GzipBomb(std::string_view head, std::string_view unit, uint64_t inflated_bytes,
                     std::string_view tail) {
  std::string block;
  while (block.size() < (1u << 20)) block += unit;
  const uint64_t repeats = std::max<uint64_t>(1, inflated_bytes / block.size());
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff", 10);
  out += RawDeflate(zs, head, Z_FULL_FLUSH);
  const std::string packed = RawDeflate(zs, block, Z_FULL_FLUSH);
  out.reserve(out.size() + packed.size() * repeats + 64);
  uLong crc = crc32(0, reinterpret_cast<const Bytef*>(head.data()), static_cast<uInt>(head.size()));
  const uLong block_crc =
      crc32(0, reinterpret_cast<const Bytef*>(block.data()), static_cast<uInt>(block.size()));
  for (uint64_t i = 0; i < repeats; ++i) {
    out += packed;
    crc = crc32_combine(crc, block_crc, static_cast<z_off_t>(block.size()));
  }
  out += RawDeflate(zs, tail, Z_FINISH);
  deflateEnd(&zs);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(tail.data()), static_cast<uInt>(tail.size()));
  const uint64_t total = head.size() + repeats * block.size() + tail.size();
  for (int i = 0; i < 4; ++i) out += static_cast<char>((crc >> (8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) out += static_cast<char>((total >> (8 * i)) & 0xff);
  return out;
}

std::string SharedFixture(std::string_view rel) {
  fs::path p = fs::path(PROFWATCH_SOURCE_DIR) / ".." / "shared" / "fixtures" / rel;
  std::error_code ec;
  if (!fs::exists(p, ec)) return "";
  return fs::weakly_canonical(p, ec).string();
}

std::string ProjectFixture(std::string_view rel) {
  return (fs::path(PROFWATCH_SOURCE_DIR) / "tests" / "fixtures" / rel).string();
}

std::string BinaryPath(std::string_view name) {
  for (const char* sub : {"exporter", "tools/tracegen", "bench", ""}) {
    fs::path p = fs::path(PROFWATCH_BINARY_DIR) / sub / name;
    if (fs::exists(p)) return p.string();
  }
  return (fs::path(PROFWATCH_BINARY_DIR) / "exporter" / name).string();
}

CommandResult RunCommand(const std::string& command, const std::string& cwd) {
  TempDir tmp;
  std::string out_path = tmp.Sub("out"), err_path = tmp.Sub("err");
  std::string full = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + "( " + command + " ) >'" +
                     out_path + "' 2>'" + err_path + "'";
  int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  return r;
}

}  // namespace profwatch::testing
