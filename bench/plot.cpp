// SPDX-License-Identifier: BSD-3-Clause
#include "plot.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace portico::bench {

namespace {

// ---- reading our own JSON lines: flat objects of strings, numbers, null, true/false ----------

class FlatJson {
public:
    explicit FlatJson(const std::string &s) : s_(s) {}
    bool parse(std::map<std::string, std::string> &out) {
        ws();
        if (!eat('{')) return false;
        ws();
        if (eat('}')) return rest_empty();
        for (;;) {
            std::string key, value;
            ws();
            if (!string(key)) return false;
            ws();
            if (!eat(':')) return false;
            ws();
            if (peek() == '"') {
                if (!string(value)) return false;
            } else {
                while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' &&
                       !std::isspace(static_cast<unsigned char>(s_[i_])))
                    value.push_back(s_[i_++]);
                if (value.empty()) return false;
            }
            out[key] = value;
            ws();
            if (eat(',')) continue;
            if (eat('}')) return rest_empty();
            return false;
        }
    }

private:
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    bool eat(char c) {
        if (peek() != c) return false;
        ++i_;
        return true;
    }
    void ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool rest_empty() {
        ws();
        return i_ == s_.size();
    }
    bool string(std::string &out) {
        if (!eat('"')) return false;
        while (i_ < s_.size() && s_[i_] != '"') {
            char c = s_[i_++];
            if (c == '\\') {
                if (i_ >= s_.size()) return false;
                c = s_[i_++];
                if (c == 'n')
                    c = '\n';
                else if (c == 't')
                    c = '\t';
                else if (c == 'u') { // only what we write: \u00xx
                    if (i_ + 4 > s_.size()) return false;
                    c = static_cast<char>(std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16));
                    i_ += 4;
                }
            }
            out.push_back(c);
        }
        return eat('"');
    }
    const std::string &s_;
    size_t i_ = 0;
};

double number(const std::map<std::string, std::string> &m, const std::string &k, double fallback = NAN) {
    auto it = m.find(k);
    if (it == m.end() || it->second == "null") return fallback;
    char *end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    return end && *end == '\0' ? v : fallback;
}

std::string text(const std::map<std::string, std::string> &m, const std::string &k) {
    auto it = m.find(k);
    return it == m.end() ? std::string() : it->second;
}

// ---- drawing ----------------------------------------------------------------------------------

std::string esc(const std::string &s) {
    std::string o;
    for (char c : s) {
        if (c == '&')
            o += "&amp;";
        else if (c == '<')
            o += "&lt;";
        else if (c == '>')
            o += "&gt;";
        else if (c == '"')
            o += "&quot;";
        else
            o.push_back(c);
    }
    return o;
}

std::string fmt(const char *f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

std::string size_label(double x) {
    const double k = 1024;
    if (x >= k * k) return fmt("%.0fM", x / (k * k));
    if (x >= k) return fmt("%.0fK", x / k);
    return fmt("%.0f", x);
}

std::string value_label(double v) {
    if (v >= 1e6) return fmt("%.0fM", v / 1e6);
    if (v >= 1e3) return fmt("%.0fk", v / 1e3);
    if (v >= 1) return fmt("%.0f", v);
    return fmt("%g", v);
}

double x_of(const Result &r) { return r.size > 0 ? static_cast<double>(r.size) : static_cast<double>(r.procs); }

constexpr double kPanelW = 620, kPanelH = 400, kLeft = 70, kRight = 20, kTop = 48, kBottom = 92;

// A panel's plotting area and its log-log scales: x in powers of two, y in decades.
struct Axes {
    double lx0, lx1, ly0, ly1; // log2 of the x range, log10 of the y range
    double px0, py0, pw, ph;   // the plotting area
    double X(double x) const { return px0 + (std::log2(x) - lx0) / (lx1 - lx0) * pw; }
    double Y(double y) const { return py0 + ph - (std::log10(y) - ly0) / (ly1 - ly0) * ph; }
};

// The ranges cover every value drawn (medians, min..max, baselines), rounded out to whole powers.
Axes axes_for(const std::vector<const Result *> &rs, double ox, double oy) {
    double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
    auto see_y = [&](double v) {
        if (std::isfinite(v) && v > 0) {
            ylo = std::min(ylo, v);
            yhi = std::max(yhi, v);
        }
    };
    for (const Result *r : rs) {
        xlo = std::min(xlo, x_of(*r));
        xhi = std::max(xhi, x_of(*r));
        see_y(r->value.min);
        see_y(r->value.max);
        see_y(r->value.median);
        if (r->has_baseline) see_y(r->baseline.median);
        if (r->has_baseline2) see_y(r->baseline2.median);
    }
    if (!(xlo > 0)) xlo = xhi = 1;
    if (!(ylo > 0)) ylo = yhi = 1;
    Axes a{};
    a.lx0 = std::floor(std::log2(xlo)) - (xlo == xhi ? 1 : 0);
    a.lx1 = std::ceil(std::log2(xhi)) + (xlo == xhi ? 1 : 0);
    a.ly0 = std::floor(std::log10(ylo));
    a.ly1 = std::max(a.ly0 + 1, std::ceil(std::log10(yhi)));
    a.pw = kPanelW - kLeft - kRight;
    a.ph = kPanelH - kTop - kBottom;
    a.px0 = ox + kLeft;
    a.py0 = oy + kTop;
    return a;
}

void draw_titles(std::ostringstream &o, double ox, double oy, const Axes &a, const Result &first, bool by_procs) {
    o << "<text x=\"" << ox + kPanelW / 2 << "\" y=\"" << oy + 18
      << "\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">"
      << esc(first.test + (first.variant.empty() ? "" : " " + first.variant) + " (" + first.transport +
             (by_procs ? "" : ", " + std::to_string(first.procs) + " processes") + ")")
      << "</text>\n";
    o << "<text x=\"" << ox + kPanelW / 2 << "\" y=\"" << oy + 34 << "\" text-anchor=\"middle\" fill=\"#555\">"
      << esc(first.unit + ", " + first.better + " is better; medians, bars = min..max over repetitions") << "</text>\n";
    o << "<rect x=\"" << a.px0 << "\" y=\"" << a.py0 << "\" width=\"" << a.pw << "\" height=\"" << a.ph
      << "\" fill=\"none\" stroke=\"#000\"/>\n";
}

// y grid: decades, and 2 and 5 when the axis spans few decades.
void draw_y_grid(std::ostringstream &o, const Axes &a) {
    const int decades = static_cast<int>(a.ly1 - a.ly0);
    for (int d = static_cast<int>(a.ly0); d <= static_cast<int>(a.ly1); ++d) {
        for (double m : {1.0, 2.0, 5.0}) {
            if (m != 1.0 && decades > 3) continue;
            const double v = m * std::pow(10.0, d);
            if (std::log10(v) > a.ly1 + 1e-9) continue;
            const double y = a.Y(v);
            o << "<line x1=\"" << a.px0 << "\" x2=\"" << a.px0 + a.pw << "\" y1=\"" << y << "\" y2=\"" << y
              << "\" stroke=\"#ddd\"/>\n";
            o << "<text x=\"" << a.px0 - 5 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << esc(value_label(v))
              << "</text>\n";
        }
    }
}

// x grid: powers of two; labels at the measured x values, skipping any too close to the last.
// Then both axis titles.
void draw_x_grid(std::ostringstream &o, double ox, const Axes &a, const std::vector<const Result *> &rs,
                 bool by_procs) {
    for (int e = static_cast<int>(a.lx0); e <= static_cast<int>(a.lx1); ++e) {
        const double x = a.X(std::ldexp(1.0, e));
        o << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << a.py0 << "\" y2=\"" << a.py0 + a.ph
          << "\" stroke=\"#eee\"/>\n";
    }
    std::vector<double> xs;
    for (const Result *r : rs) xs.push_back(x_of(*r));
    std::sort(xs.begin(), xs.end());
    double last_label = -1e9;
    for (double v : xs) {
        const double x = a.X(v);
        if (x - last_label < 26) continue;
        last_label = x;
        o << "<text x=\"" << x << "\" y=\"" << a.py0 + a.ph + 15 << "\" text-anchor=\"middle\">"
          << esc(by_procs ? fmt("%.0f", v) : size_label(v)) << "</text>\n";
    }
    o << "<text x=\"" << a.px0 + a.pw / 2 << "\" y=\"" << a.py0 + a.ph + 32 << "\" text-anchor=\"middle\">"
      << (by_procs ? "processes" : "message size (bytes)") << "</text>\n";
    o << "<text transform=\"translate(" << ox + 16 << "," << a.py0 + a.ph / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << esc(rs.front()->unit) << "</text>\n";
}

// Portico's medians and the baselines' (when measured), each with its legend line below the panel.
void draw_curves(std::ostringstream &o, double oy, const Axes &a, const std::vector<const Result *> &rs) {
    const Result &first = *rs.front();
    struct Curve {
        std::string name, color, dash;
        double (*get)(const Result &);
        bool (*has)(const Result &);
    };
    const Curve curves[] = {
        {"Portico " + first.test, "#1f5fbf", "", [](const Result &r) { return r.value.median; },
         [](const Result &) { return true; }},
        {"baseline: " + first.baseline_kind, "#d9730d", "6,4", [](const Result &r) { return r.baseline.median; },
         [](const Result &r) { return r.has_baseline; }},
        {"baseline: " + first.baseline2_kind, "#2b9e3a", "2,3", [](const Result &r) { return r.baseline2.median; },
         [](const Result &r) { return r.has_baseline2; }},
    };
    int legend = 0;
    for (const Curve &c : curves) {
        std::string pts;
        int n = 0;
        for (const Result *r : rs) {
            const double v = c.get(*r);
            if (!c.has(*r) || !(v > 0) || !std::isfinite(v)) continue;
            pts += fmt("%.1f", a.X(x_of(*r))) + "," + fmt("%.1f", a.Y(v)) + " ";
            ++n;
        }
        if (n == 0) continue;
        const std::string dash = c.dash.empty() ? "" : " stroke-dasharray=\"" + c.dash + "\"";
        o << "<polyline fill=\"none\" stroke=\"" << c.color << "\" stroke-width=\"2\"" << dash << " points=\"" << pts
          << "\"/>\n";
        for (const Result *r : rs) {
            const double v = c.get(*r);
            if (!c.has(*r) || !(v > 0) || !std::isfinite(v)) continue;
            o << "<circle cx=\"" << a.X(x_of(*r)) << "\" cy=\"" << a.Y(v) << "\" r=\"3\" fill=\"" << c.color
              << "\"/>\n";
        }
        const double ly = oy + kPanelH - kBottom + 50 + 14 * legend, lx = a.px0 + 10;
        o << "<line x1=\"" << lx << "\" x2=\"" << lx + 30 << "\" y1=\"" << ly - 4 << "\" y2=\"" << ly - 4
          << "\" stroke=\"" << c.color << "\" stroke-width=\"2\"" << dash << "/>\n";
        o << "<text x=\"" << lx + 38 << "\" y=\"" << ly << "\">" << esc(c.name) << "</text>\n";
        ++legend;
    }
}

// min..max bars of the measured value.
void draw_bars(std::ostringstream &o, const Axes &a, const std::vector<const Result *> &rs) {
    for (const Result *r : rs) {
        if (!(r->value.min > 0) || !(r->value.max > 0)) continue;
        const double x = a.X(x_of(*r));
        o << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << a.Y(r->value.min) << "\" y2=\"" << a.Y(r->value.max)
          << "\" stroke=\"#1f5fbf\" stroke-width=\"1\"/>\n";
    }
}

// One group of results (a test on one transport) drawn at (ox, oy).
void panel(std::ostringstream &o, double ox, double oy, const std::vector<const Result *> &rs) {
    const Result &first = *rs.front();
    const bool by_procs = first.size == 0;
    const Axes a = axes_for(rs, ox, oy);
    o << "<g font-family=\"sans-serif\" font-size=\"11\">\n";
    draw_titles(o, ox, oy, a, first, by_procs);
    draw_y_grid(o, a);
    draw_x_grid(o, ox, a, rs, by_procs);
    draw_curves(o, oy, a, rs);
    draw_bars(o, a, rs);
    o << "</g>\n";
}

} // namespace

std::vector<Result> read_json_results(const std::string &file) {
    std::ifstream in(file);
    if (!in) throw Error("cannot read " + file + ": " + std::strerror(errno));
    std::vector<Result> out;
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        const size_t b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos || line[b] != '{') continue;
        std::map<std::string, std::string> m;
        if (!FlatJson(line).parse(m) || text(m, "test").empty() || !std::isfinite(number(m, "value")))
            throw Error(file + ":" + std::to_string(lineno) + ": not a portico-bench result line");
        Result r;
        r.test = text(m, "test");
        r.variant = text(m, "variant");
        r.transport = text(m, "transport");
        r.procs = static_cast<int>(number(m, "procs", 0));
        r.size = static_cast<uint64_t>(number(m, "size", 0));
        r.unit = text(m, "unit");
        r.better = text(m, "better");
        r.value = {number(m, "value"), number(m, "min"), number(m, "max")};
        if (m.count("baseline")) {
            r.has_baseline = true;
            r.baseline = {number(m, "baseline"), number(m, "baseline_min"), number(m, "baseline_max")};
            r.baseline_kind = text(m, "baseline_kind");
        }
        if (m.count("baseline2")) {
            r.has_baseline2 = true;
            r.baseline2 = {number(m, "baseline2"), number(m, "baseline2_min"), number(m, "baseline2_max")};
            r.baseline2_kind = text(m, "baseline2_kind");
        }
        r.reps = static_cast<int>(number(m, "reps", 0));
        r.iters = static_cast<uint64_t>(number(m, "iters", 0));
        out.push_back(r);
    }
    return out;
}

void write_svg(const std::string &file, const std::vector<Result> &results) {
    // One panel per (test, transport, and for sized tests the process count), in order of appearance.
    std::vector<std::string> keys;
    std::map<std::string, std::vector<const Result *>> groups;
    for (const Result &r : results) {
        const std::string key =
            r.test + "/" + r.variant + "/" + r.transport + "/" + (r.size > 0 ? std::to_string(r.procs) : "");
        if (!groups.count(key)) keys.push_back(key);
        groups[key].push_back(&r);
    }
    const int cols = keys.size() > 1 ? 2 : 1;
    const int rows = static_cast<int>((keys.size() + static_cast<size_t>(cols) - 1) / static_cast<size_t>(cols));
    std::ostringstream o;
    o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << cols * kPanelW << "\" height=\""
      << std::max(1, rows) * kPanelH << "\" viewBox=\"0 0 " << cols * kPanelW << " " << std::max(1, rows) * kPanelH
      << "\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
    if (keys.empty()) o << "<text x=\"20\" y=\"40\" font-family=\"sans-serif\">no results</text>\n";
    for (size_t i = 0; i < keys.size(); ++i) {
        const size_t col = i % static_cast<size_t>(cols), row = i / static_cast<size_t>(cols);
        panel(o, static_cast<double>(col) * kPanelW, static_cast<double>(row) * kPanelH, groups[keys[i]]);
    }
    o << "</svg>\n";
    std::ofstream out(file, std::ios::trunc);
    if (!out) throw Error("cannot write " + file + ": " + std::strerror(errno));
    out << o.str();
    out.close();
    if (!out) throw Error("cannot write " + file);
}

} // namespace portico::bench
