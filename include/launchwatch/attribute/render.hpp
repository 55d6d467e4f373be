// Kept for existing includes; the declarations now live in the headers included below.
#pragma once

#include <launchwatch/report/chrome_trace.hpp>  // IWYU pragma: export
#include <launchwatch/report/folded.hpp>  // IWYU pragma: export
#include <launchwatch/report/tree.hpp>  // IWYU pragma: export
