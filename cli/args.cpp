#include "args.hpp"

#include "common.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace gpkcli {

namespace {

std::string key_of(const OptionSpec &spec) {
    return spec.long_name ? std::string(spec.long_name) : std::string(1, spec.short_name);
}

const OptionSpec *find_short(const std::vector<OptionSpec> &specs, char c) {
    for (const auto &s : specs)
        if (s.short_name == c) return &s;
    return nullptr;
}

const OptionSpec *find_long(const std::vector<OptionSpec> &specs, const std::string &name) {
    for (const auto &s : specs)
        if (s.long_name && name == s.long_name) return &s;
    return nullptr;
}

// Parses "--name" or "--name=value"; may consume the next argument as the value.
void parse_long(const std::vector<std::string> &args, size_t &i, const std::vector<OptionSpec> &specs,
                ParsedArgs &out) {
    const std::string &arg = args[i];
    size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec *spec = find_long(specs, name);
    if (!spec) throw UsageError("unknown option '--" + name + "'");
    std::string shown = "--" + name;
    if (!spec->value_name) {
        if (eq != std::string::npos) throw UsageError(shown + " takes no value");
        out.set(key_of(*spec), shown, "");
    } else if (eq != std::string::npos) {
        out.set(key_of(*spec), shown, arg.substr(eq + 1));
    } else {
        if (i + 1 >= args.size()) throw UsageError(shown + " needs a value (" + spec->value_name + ")");
        out.set(key_of(*spec), shown, args[++i]);
    }
}

// Parses "-x", "-xVALUE", "-x VALUE" or a cluster of flags "-rh".
void parse_short(const std::vector<std::string> &args, size_t &i, const std::vector<OptionSpec> &specs,
                 ParsedArgs &out) {
    const std::string &arg = args[i];
    for (size_t k = 1; k < arg.size(); ++k) {
        const OptionSpec *spec = find_short(specs, arg[k]);
        std::string shown = std::string("-") + arg[k];
        if (!spec) throw UsageError("unknown option '" + shown + "'");
        if (!spec->value_name) {
            out.set(key_of(*spec), shown, "");
            continue;
        }
        if (k + 1 < arg.size()) {
            out.set(key_of(*spec), shown, arg.substr(k + 1));
        } else {
            if (i + 1 >= args.size()) throw UsageError(shown + " needs a value (" + spec->value_name + ")");
            out.set(key_of(*spec), shown, args[++i]);
        }
        return;
    }
}

} // namespace

void ParsedArgs::set(const std::string &key, const std::string &shown, const std::string &value) {
    values_[key] = value;
    shown_[key] = shown;
}

std::string ParsedArgs::text(const std::string &key, const std::string &fallback) const {
    auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second;
}

size_t ParsedArgs::whole(const std::string &key, size_t fallback) const {
    auto it = values_.find(key);
    return it == values_.end() ? fallback : parse_whole(it->second, shown_.at(key));
}

double ParsedArgs::number(const std::string &key, double fallback) const {
    auto it = values_.find(key);
    return it == values_.end() ? fallback : parse_number(it->second, shown_.at(key));
}

ParsedArgs parse_args(const std::vector<std::string> &args, const std::vector<OptionSpec> &specs) {
    ParsedArgs out;
    bool options_ended = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &arg = args[i];
        if (options_ended || arg.size() < 2 || arg[0] != '-') {
            out.add_positional(arg);
        } else if (arg == "--") {
            options_ended = true;
        } else if (arg[1] == '-') {
            parse_long(args, i, specs, out);
        } else {
            parse_short(args, i, specs, out);
        }
    }
    return out;
}

std::string options_help(const std::vector<OptionSpec> &specs) {
    std::string text;
    for (const auto &s : specs) {
        std::string left = "  ";
        left += s.short_name ? std::string("-") + s.short_name : std::string("  ");
        if (s.long_name) left += std::string(s.short_name ? ", " : "  ") + "--" + s.long_name;
        if (s.value_name) left += std::string(" ") + s.value_name;
        if (left.size() < 28)
            left.resize(28, ' ');
        else
            left += "\n" + std::string(28, ' ');
        text += left + s.help + "\n";
    }
    return text;
}

size_t parse_whole(const std::string &text, const std::string &what) {
    bool digits = !text.empty();
    for (char c : text) digits = digits && c >= '0' && c <= '9';
    errno = 0;
    unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!digits || errno == ERANGE || v > size_t(-1))
        throw UsageError(what + " is '" + text + "'; expected a whole number");
    return size_t(v);
}

double parse_number(const std::string &text, const std::string &what) {
    char *end = nullptr;
    double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v))
        throw UsageError(what + " is '" + text + "'; expected a finite number");
    return v;
}

void parse_size_pair(const std::string &text, const std::string &what, size_t *width, size_t *height) {
    size_t x = text.find('x');
    if (x == std::string::npos)
        throw UsageError(what + " is '" + text + "'; expected WIDTHxHEIGHT, e.g. 640x480");
    *width = parse_whole(text.substr(0, x), what + " width");
    *height = parse_whole(text.substr(x + 1), what + " height");
    if (*width == 0 || *height == 0)
        throw UsageError(what + " is '" + text + "'; both sides must be at least 1");
}

void parse_range(const std::string &text, const std::string &what, double *lo, double *hi) {
    size_t colon = text.find(':');
    if (colon == std::string::npos) throw UsageError(what + " is '" + text + "'; expected LO:HI, e.g. 0:256");
    *lo = parse_number(text.substr(0, colon), what + " lower end");
    *hi = parse_number(text.substr(colon + 1), what + " upper end");
    if (!(*lo < *hi)) throw UsageError(what + " is '" + text + "'; LO must be below HI");
}

size_t parse_choice(const std::string &text, const std::string &what,
                    const std::vector<std::string> &choices) {
    std::string list;
    for (size_t i = 0; i < choices.size(); ++i) {
        if (choices[i] == text) return i;
        list += (i ? (i + 1 == choices.size() ? " or " : ", ") : "") + choices[i];
    }
    throw UsageError(what + " is '" + text + "'; expected " + list);
}

} // namespace gpkcli
