// Kept for existing includes; the declarations now live in the headers included below.
#pragma once

#include <launchwatch/report/kernel_table.hpp>  // IWYU pragma: export
