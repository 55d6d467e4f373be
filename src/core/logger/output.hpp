// Where the profiling logger's lines go: opening a log_output as an spdlog logger of its own.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/logger.h>

#include <launchwatch/logger.hpp>

namespace launchwatch::detail {

/// Why `path` cannot be appended to, or nothing when it looks writable; creates nothing. For a log
/// the logger has no need to open yet (profiling is disabled), so a bad path is still reported when
/// the first client is created, without leaving an empty file behind.
std::optional<std::string> why_not_appendable(const std::filesystem::path& path);

/// Throws configuration_error for a `path` that cannot be appended to, `why`, naming `setting`
/// (LAUNCHWATCH_LOG, or set_output) and what it accepts.
[[noreturn]] void throw_cannot_append(const std::filesystem::path& path, std::string_view setting,
                                      std::string_view why);

/// Opens `output`. `setting` names where it was chosen, for the error: the environment variable, or
/// set_output. Throws configuration_error when it cannot be opened.
std::shared_ptr<spdlog::logger> open_output(const log_output& output, std::string_view setting);

}  // namespace launchwatch::detail
