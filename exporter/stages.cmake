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
profwatch_stage(core      LIBS Threads::Threads spdlog::spdlog)
profwatch_stage(watch     DEPS core LIBS spdlog::spdlog)
profwatch_stage(window    DEPS watch)
profwatch_stage(read      DEPS core LIBS ZLIB::ZLIB profwatch_isal)
profwatch_stage(parse     DEPS read LIBS simdjson::simdjson)
profwatch_stage(classify  DEPS core LIBS yaml-cpp)
profwatch_stage(aggregate DEPS parse classify watch)
# The drill-compatible report reads parsed events and their categories only.
profwatch_stage(drill     DEPS parse classify)
profwatch_stage(analysis  DEPS aggregate window)
profwatch_stage(snapshot  DEPS aggregate)
profwatch_stage(expose    DEPS snapshot
                LIBS prometheus-cpp::core nlohmann_json::nlohmann_json spdlog::spdlog)
# Step times from training logs, beside the trace flow.
profwatch_stage(steplog   DEPS core LIBS ZLIB::ZLIB)
# Persistence (state file, window history).
profwatch_stage(store     OPTIONAL DEPS expose analysis window LIBS nlohmann_json::nlohmann_json)
profwatch_stage(pipeline  DEPS analysis expose steplog watch window store
                LIBS prometheus-cpp::core nlohmann_json::nlohmann_json spdlog::spdlog)
profwatch_stage(cli       DEPS pipeline drill
                LIBS CLI11::CLI11 yaml-cpp nlohmann_json::nlohmann_json
                     prometheus-cpp::core prometheus-cpp::pull spdlog::spdlog)
