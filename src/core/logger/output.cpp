// Opening the profiling logger's outputs.

#include "core/logger/output.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <launchwatch/errors.hpp>

#include "core/interface/diagnostics.hpp"
#include "core/logger/environment.hpp"

namespace launchwatch::detail {
namespace {

/// Appends to a file launchwatch opened itself, rather than spdlog's file sink, which creates
/// missing directories (hiding a typo in the path) and retries a failed open.
class append_file_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  append_file_sink(std::FILE* file, std::string path) : file_{file}, path_{std::move(path)} {}
  ~append_file_sink() override { std::fclose(file_); }
  append_file_sink(const append_file_sink&) = delete;
  append_file_sink& operator=(const append_file_sink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()) report_write_error();
  }
  void flush_() override {
    if (std::fflush(file_) != 0) report_write_error();
  }

 private:
  // Once per file: a full disk fails every line after the first.
  void report_write_error() {
    if (std::exchange(failed_, true)) return;
    const int code = errno;
    diagnostics().error(
        "The profiling logger could not write to `{}` ({}); lines from now on may be missing from "
        "it. Free space or choose another LAUNCHWATCH_LOG.",
        path_, std::strerror(code));
  }

  std::FILE* file_;
  std::string path_;
  bool failed_ = false;
};

std::shared_ptr<spdlog::logger> make_output_logger(spdlog::sink_ptr sink) {
  // Not registered with spdlog: spdlog::set_pattern and set_level apply to every registered logger,
  // and a program styling its own logs must not put timestamps into these report lines.
  auto logger = std::make_shared<spdlog::logger>("launchwatch.profile", std::move(sink));
  logger->set_pattern("%v");
  logger->set_level(spdlog::level::trace);
  logger->flush_on(spdlog::level::off);
  return logger;
}

}  // namespace

std::optional<std::string> why_not_appendable(const std::filesystem::path& path) {
  const auto directory = path.has_parent_path() ? path.parent_path() : std::filesystem::path{"."};
  std::error_code ignored;
  if (!std::filesystem::is_directory(directory, ignored)) {
    return fmt::format("its directory `{}` does not exist", directory.string());
  }
  if (std::filesystem::is_directory(path, ignored)) return std::string{"it is a directory"};
  const auto& must_be_writable = std::filesystem::exists(path, ignored) ? path : directory;
  if (::access(must_be_writable.c_str(), W_OK) != 0) {
    return fmt::format("`{}` is not writable ({})", must_be_writable.string(), std::strerror(errno));
  }
  return std::nullopt;
}

namespace {

/// Why `path` cannot be appended to, or nothing when it was opened into `file`.
std::optional<std::string> open_for_appending(const std::filesystem::path& path, std::FILE*& file) {
  if (auto why = why_not_appendable(path)) return why;
  file = std::fopen(path.c_str(), "a");
  if (file == nullptr) return std::string{std::strerror(errno)};
  return std::nullopt;
}

}  // namespace

[[noreturn]] void throw_cannot_append(const std::filesystem::path& path, std::string_view setting,
                                      std::string_view why) {
  if (setting == log_variable) {
    throw configuration_error{fmt::format(
        "{} is set to `{}`, which launchwatch cannot open for appending: {}. Accepted values: {}.",
        log_variable, path.string(), why, accepted_logs)};
  }
  throw configuration_error{fmt::format(
      "profiling_logger::set_output cannot open `{}` for appending: {}. Give the path of a file in "
      "an existing directory that this process may write, or log_output::standard_error().",
      path.string(), why)};
}

std::shared_ptr<spdlog::logger> open_output(const log_output& output, std::string_view setting) {
  switch (output.where()) {
    case log_output::kind::standard_error:
      return make_output_logger(std::make_shared<spdlog::sinks::stderr_sink_mt>());
    case log_output::kind::standard_output:
      return make_output_logger(std::make_shared<spdlog::sinks::stdout_sink_mt>());
    case log_output::kind::stream:
      if (output.stream() == nullptr) {
        throw configuration_error{"profiling_logger::set_output was given a null stream"};
      }
      return make_output_logger(std::make_shared<spdlog::sinks::ostream_sink_mt>(*output.stream()));
    case log_output::kind::file: break;
  }
  std::FILE* file = nullptr;
  if (auto why = open_for_appending(output.path(), file)) {
    throw_cannot_append(output.path(), setting, *why);
  }
  return make_output_logger(std::make_shared<append_file_sink>(file, output.path().string()));
}

}  // namespace launchwatch::detail
