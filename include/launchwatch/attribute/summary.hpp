// Kept for existing includes; the declarations now live in the headers included below.
#pragma once

#include <launchwatch/report/summary.hpp>  // IWYU pragma: export
#include <launchwatch/report/summary_json.hpp>  // IWYU pragma: export
