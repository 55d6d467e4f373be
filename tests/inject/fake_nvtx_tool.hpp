// A fake NVTX tool for tests, attached in-process through NVTX's static injection hook
// (InitializeInjectionNvtx2_fnptr, defined by the test binary): it records the domain ranges it
// hears as "push DOMAIN:NAME" and "pop DOMAIN".
#pragma once

#include <string>
#include <vector>

namespace launchwatch::testing {

/// What the tool heard so far, in order, from every thread.
std::vector<std::string> heard_ranges();

/// Forgets what the tool heard, so a test sees only its own ranges.
void forget_heard_ranges();

}  // namespace launchwatch::testing
