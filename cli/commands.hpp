// The subcommands of the gpk command. Each takes its arguments after the subcommand's name, prints its
// results on stdout, and returns an exit code; failures are thrown (common.hpp) and mapped in main.cpp.
#pragma once

#include <string>
#include <vector>

namespace gpkcli {

using Args = std::vector<std::string>;

int run_info(const Args &args);
int run_heat(const Args &args);
int run_histogram(const Args &args);
int run_convolve(const Args &args);
int run_bench(const Args &args);

} // namespace gpkcli
