// Kept for existing includes; the declarations now live in the headers included below.
#pragma once

#include <launchwatch/report/report_files.hpp>  // IWYU pragma: export
