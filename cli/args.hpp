// Command-line option parsing for the gpk subcommands: short options (-n 5, -n5, clustered flags -rh),
// long options (--bins 64, --bins=64), "--" to end options. No external libraries.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gpkcli {

struct OptionSpec {
    char short_name;        // 0 when the option has no short form
    const char *long_name;  // nullptr when the option has no long form
    const char *value_name; // nullptr for a flag that takes no value
    const char *help;
};

class ParsedArgs {
public:
    // The key of an option is its long name when it has one, else its short letter.
    bool has(const std::string &key) const { return values_.count(key) != 0; }
    std::string text(const std::string &key, const std::string &fallback) const;
    size_t whole(const std::string &key, size_t fallback) const;
    double number(const std::string &key, double fallback) const;
    const std::vector<std::string> &positional() const { return positional_; }

    // Used by the parser.
    void set(const std::string &key, const std::string &shown, const std::string &value);
    void add_positional(const std::string &arg) { positional_.push_back(arg); }

private:
    std::map<std::string, std::string> values_;
    std::map<std::string, std::string> shown_; // how the user spelled the option, for messages
    std::vector<std::string> positional_;
};

// Parses args (without the program and subcommand names). Throws UsageError on an unknown option or a
// missing value.
ParsedArgs parse_args(const std::vector<std::string> &args, const std::vector<OptionSpec> &specs);

// The option table as help text, one option a line.
std::string options_help(const std::vector<OptionSpec> &specs);

// Whole-string conversions; `what` names the option in the UsageError thrown on bad text.
size_t parse_whole(const std::string &text, const std::string &what);
double parse_number(const std::string &text, const std::string &what);

// "WIDTHxHEIGHT" → (width, height), both >= 1.
void parse_size_pair(const std::string &text, const std::string &what, size_t *width, size_t *height);

// "LO:HI" with finite LO < HI.
void parse_range(const std::string &text, const std::string &what, double *lo, double *hi);

// Returns the index of `text` in `choices`, or throws UsageError listing them.
size_t parse_choice(const std::string &text, const std::string &what,
                    const std::vector<std::string> &choices);

} // namespace gpkcli
