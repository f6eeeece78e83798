# The stages of profwatch, in data-flow order: the one table both the build
# (exporter/CMakeLists.txt makes each line a static library profwatch_<stage>
# from src/<stage>/sources.cmake) and the include check
# (tests/format/check_stage_deps.cmake) read.
#
#   DEPS      the earlier stages this one uses directly; each must be declared
#             above it, so a dependency against the flow cannot be written
#             here. A stage may include headers of itself, its DEPS and what
#             they use in turn, nothing else.
#   LIBS      third-party libraries this stage uses (linked PUBLIC).
#   OPTIONAL  the stage exists only when src/<stage>/sources.cmake does; a
#             missing optional stage is dropped from the DEPS of later ones.
# Result, errors, Clock, logging: what every stage may use.
profwatch_stage(core      LIBS Threads::Threads spdlog::spdlog)
# Finding trace files: scanner, inotify/poll watchers, and the profile
# directory layout (<ts> dir and trace file names, watch/layout.h); --shard's
# hashmod of a job name (watch/shard.h, nettle's MD5).
profwatch_stage(watch     DEPS core LIBS spdlog::spdlog ${NETTLE_LIBRARY})
# Which files form one profiling window; the window assembler.
profwatch_stage(window    DEPS watch)
# Per owner: what the daemon refuses and what a per-owner cap leaves out
# (values in, changes out; the daemon applies them).
profwatch_stage(ledger    DEPS watch)
# Bytes of a trace: files, gzip (zlib / ISA-L), read-ahead.
profwatch_stage(read      DEPS core LIBS ZLIB::ZLIB profwatch_isal)
# Trace events from bytes: the JSON and xplane parsers, and the Nsight
# Systems SQLite export reader (through the system SQLite library).
profwatch_stage(parse     DEPS read LIBS simdjson::simdjson SQLite::SQLite3)
# Kernel families: rule sets and the rules file.
profwatch_stage(classify  DEPS core LIBS yaml-cpp)
# Events of one window into WindowStats (uses watch's <ts> dir name test).
profwatch_stage(aggregate DEPS parse classify watch)
# The profile_drill-compatible report: parsed events and their families only.
profwatch_stage(drill     DEPS parse classify)
# read -> parse -> aggregate for one window, shared by the CLI and the daemon.
profwatch_stage(analysis  DEPS aggregate window)
# Every derived figure of a window, computed once from its aggregate, its
# step time and device (per GPU per step, diagnosis, FLOPs and MFU,
# collectives), and the step basis (profile steps, step time) chosen once.
profwatch_stage(figures   DEPS aggregate)
# Immutable per-run Snapshot (with each run's figures) and its store.
profwatch_stage(snapshot  DEPS figures)
# Metric names, Prometheus collectables, the /metrics body (gzip), reports.
profwatch_stage(expose    DEPS snapshot
                LIBS prometheus-cpp::core nlohmann_json::nlohmann_json spdlog::spdlog ZLIB::ZLIB)
# Step times from training logs, beside the trace flow (logs are opened
# through read's one confinement check, read/byte_source.h).
profwatch_stage(steplog   DEPS core read LIBS ZLIB::ZLIB)
# Persistence: the run-state JSON, the --state file, the --history file and
# what compare reads back from it (docs/on-disk-formats.md).
profwatch_stage(store     DEPS snapshot window LIBS nlohmann_json::nlohmann_json)
# The daemon: every stage wired together.
profwatch_stage(pipeline  DEPS analysis expose steplog watch window ledger store
                LIBS prometheus-cpp::core nlohmann_json::nlohmann_json spdlog::spdlog)
# The front door of `serve`: the --listen address, the web config file
# (exporter-toolkit's format: TLS, basic auth, headers) and its reload, the
# HTTP server (civetweb) and its bound on connections without a request.
profwatch_stage(web       DEPS expose
                LIBS yaml-cpp spdlog::spdlog
                     civetweb::civetweb civetweb::civetweb-cpp OpenSSL::SSL OpenSSL::Crypto
                     ${CRYPT_LIBRARY})
# Commands (analyze, compare, serve, probe) and flags; the profwatch executable.
profwatch_stage(cli       DEPS pipeline drill web
                LIBS CLI11::CLI11 yaml-cpp nlohmann_json::nlohmann_json
                     prometheus-cpp::core spdlog::spdlog OpenSSL::SSL)
