// The few helpers of pass_record: walking scope paths and building a record by hand.

#include <launchwatch/report/pass_record.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace launchwatch {

std::vector<std::string_view> pass_record::scope_path(std::uint32_t scope) const {
  std::vector<std::string_view> path;
  std::optional<std::uint32_t> at = scope;
  while (at) {
    const auto& node = scopes.at(*at);
    if (node.parent && *node.parent >= *at) {
      throw std::out_of_range{"pass_record::scope_path: scope " + std::to_string(*at) +
                              " names parent " + std::to_string(*node.parent) +
                              ", which does not come before it; a parent must be added first"};
    }
    path.push_back(node.name);
    at = node.parent;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::string pass_record::scope_path_text(std::uint32_t scope, std::string_view separator) const {
  std::string text;
  for (const auto name : scope_path(scope)) {
    if (!text.empty()) text += separator;
    text += name;
  }
  return text;
}

std::size_t pass_record::scope_depth(std::uint32_t scope) const {
  return scope_path(scope).size() - 1;
}

std::uint32_t pass_record::add_kernel(std::string_view name) {
  const auto found = std::find(kernels.begin(), kernels.end(), name);
  if (found != kernels.end()) return static_cast<std::uint32_t>(found - kernels.begin());
  kernels.emplace_back(name);
  return static_cast<std::uint32_t>(kernels.size() - 1);
}

std::uint32_t pass_record::add_scope_path(const std::vector<std::string_view>& path) {
  if (path.empty()) {
    throw std::invalid_argument{
        "pass_record::add_scope_path: the path is empty; launches outside any scope have no scope "
        "index (leave launch_record::scope empty)"};
  }
  std::optional<std::uint32_t> parent;
  for (const auto name : path) {
    const auto found = std::find_if(scopes.begin(), scopes.end(), [&](const scope_info& s) {
      return s.parent == parent && s.name == name;
    });
    if (found != scopes.end()) {
      parent = static_cast<std::uint32_t>(found - scopes.begin());
    } else {
      scopes.push_back(scope_info{std::string{name}, parent});
      parent = static_cast<std::uint32_t>(scopes.size() - 1);
    }
  }
  return *parent;
}

std::uint32_t pass_record::add_stream(const stream_info& stream) {
  const auto found = std::find(streams.begin(), streams.end(), stream);
  if (found != streams.end()) return static_cast<std::uint32_t>(found - streams.begin());
  streams.push_back(stream);
  return static_cast<std::uint32_t>(streams.size() - 1);
}

}  // namespace launchwatch
