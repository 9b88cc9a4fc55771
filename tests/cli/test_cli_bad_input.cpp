// Bad input: one clear line on stderr naming the file and what is wrong, the right exit code, and no
// output file touched or half-written.
#include "cli_test.hpp"
#include "images.hpp"

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace cli {

namespace {

// A valid 8-bit gray PNG and P5 PGM, and damaged copies of them.
void make_files() {
    images::PngFile f;
    f.width = 32, f.height = 32;
    f.samples = random_values(32 * 32, 256, 21);
    images::write_png(tmp("good.png"), f);
    std::string png = images::read_text(tmp("good.png"));
    images::write_text(tmp("truncated.png"), png.substr(0, png.size() / 2));
    images::write_text(tmp("tiny.png"), png.substr(0, 5));
    std::string corrupt = png;
    corrupt[corrupt.find("IDAT") + 20] ^= 0x55; // damaged compressed data
    images::write_text(tmp("corrupt.png"), corrupt);
    corrupt = png;
    corrupt[29] ^= 0x01; // the last byte of IHDR's CRC
    images::write_text(tmp("crc.png"), corrupt);

    images::Pgm p;
    p.width = 20, p.height = 10, p.maxval = 255;
    p.samples = random_values(200, 256, 22);
    std::string pgm = images::pgm_text(p);
    images::write_text(tmp("good.pgm"), pgm);
    images::write_text(tmp("truncated.pgm"), pgm.substr(0, pgm.size() - 30));
    images::write_text(tmp("header.pgm"), "P5\n20 x\n255\n");
    images::write_text(tmp("over.pgm"), "P2\n2 2\n100\n1 2\n3 101\n");
    images::write_text(tmp("short.pgm"), "P2\n3 3\n255\n1 2 3\n4 5 6\n7 8\n");
    images::write_text(tmp("extra.pgm"), "P2\n2 1\n255\n1 2 3\n");
    images::write_text(tmp("notimage.txt"), "hello, world\n");
    images::write_text(tmp("empty.png"), "");
    f.color_type = PNG_COLOR_TYPE_RGB;
    f.samples = random_values(32 * 32 * 3, 256, 23);
    images::write_png(tmp("rgb.png"), f);
}

void unreadable_files() {
    expect_failure({"histogram", tmp("missing.png")}, 1, {"missing.png", "cannot open", "No such file"});
    expect_failure({"histogram", scratch()}, 1, {scratch(), "is a directory"});
    expect_failure({"histogram", tmp("empty.png")}, 1, {"empty.png", "empty"});
    expect_failure({"histogram", tmp("notimage.txt")}, 1, {"notimage.txt", "not a PNG, PGM or .npy"});
    if (geteuid() != 0) { // root reads any file
        chmod(tmp("good.png").c_str(), 0);
        expect_failure({"histogram", tmp("good.png")}, 1, {"good.png", "cannot open", "Permission denied"});
        chmod(tmp("good.png").c_str(), 0644);
    }
}

void damaged_images() {
    expect_failure({"histogram", tmp("truncated.png")}, 1, {"truncated.png", "bad PNG", "truncated"});
    expect_failure({"histogram", tmp("tiny.png")}, 1, {"tiny.png", "truncated"});
    expect_failure({"histogram", tmp("corrupt.png")}, 1, {"corrupt.png", "bad PNG", "IDAT"});
    expect_failure({"histogram", tmp("crc.png")}, 1, {"crc.png", "bad PNG", "CRC"});
    expect_failure({"histogram", tmp("truncated.pgm")}, 1, {"truncated.pgm", "truncated P5"});
    expect_failure({"histogram", tmp("header.pgm")}, 1, {"header.pgm", "bad PGM header", "height"});
    expect_failure({"histogram", tmp("over.pgm")}, 1, {"over.pgm", "101", "above maxval 100"});
    expect_failure({"histogram", tmp("short.pgm")}, 1, {"short.pgm", "truncated P2", "8 of 9"});
    expect_failure({"histogram", tmp("extra.pgm")}, 1, {"extra.pgm", "after the 2 P2 samples"});
    expect_failure({"heat", "-n", "10", "-m", "20", "-c", tmp("truncated.pgm")}, 1,
                   {"truncated.pgm", "truncated"});
    expect_failure({"heat", "-n", "10", "-m", "20", "-t", tmp("good.png")}, 1,
                   {"good.png", "32x32", "-n 10 -m 20"});
    expect_failure({"heat", "-n", "32", "-m", "32", "-t", tmp("rgb.png")}, 1,
                   {"rgb.png", "gray", "3 channels"});
}

void bad_options() {
    expect_failure({"convolve", "--filter", "nosuch", tmp("good.pgm"), tmp("o.pgm")}, 2,
                   {"unknown filter 'nosuch'"});
    expect_failure({"convolve", "--filter", "box:4", tmp("good.pgm"), tmp("o.pgm")}, 2, {"box:4"});
    expect_failure({"convolve", "--filter", "lp3", "--border", "edge", tmp("good.pgm"), tmp("o.pgm")}, 2,
                   {"--border", "'edge'"});
    expect_failure({"histogram", "--range", "5:1", tmp("good.pgm")}, 2, {"--range", "LO must be below HI"});
    expect_failure({"histogram", "--range", "abc", tmp("good.pgm")}, 2, {"--range", "LO:HI"});
    expect_failure({"histogram", "--range", "0:x", tmp("good.pgm")}, 2, {"--range", "'x'"});
    expect_failure({"histogram", "--dtype", "u16", tmp("good.pgm")}, 2, {"--dtype needs --raw"});
    expect_failure({"histogram", "--raw", "10x10", "--dtype", "u16", tmp("good.pgm")}, 1,
                   {"good.pgm", "213 bytes", "need 200"});
    images::write_text(tmp("ragged.txt"), "1 2 1\n1 2\n");
    expect_failure({"convolve", "--filter", tmp("ragged.txt"), tmp("good.pgm"), tmp("o.pgm")}, 1,
                   {"ragged.txt:2", "2 taps"});
    images::write_text(tmp("word.txt"), "1 x 1\n");
    expect_failure({"convolve", "--filter", tmp("word.txt"), tmp("good.pgm"), tmp("o.pgm")}, 1,
                   {"word.txt:1", "'x' is not a number"});
    images::write_text(tmp("even.txt"), "1 1\n1 1\n");
    expect_failure({"convolve", "--filter", tmp("even.txt"), tmp("good.pgm"), tmp("o.pgm")}, 1,
                   {"even.txt", "odd"});
}

// Output that cannot be written: a clear message, and nothing left behind.
void unwritable_outputs() {
    expect_failure({"convolve", "--filter", "lp3", tmp("good.pgm"), tmp("no/dir/out.pgm")}, 1,
                   {"out.pgm", "cannot write"});
    std::filesystem::create_directory(tmp("outdir.pgm"));
    expect_failure({"convolve", "--filter", "lp3", tmp("good.pgm"), tmp("outdir.pgm")}, 1,
                   {"outdir.pgm", "cannot write"});
    expect_failure({"convolve", "--filter", "lp3", tmp("good.pgm"), tmp("out.bmp")}, 1,
                   {"out.bmp", ".png or .pgm"});
    expect_failure({"convolve", "--filter", "lp3", tmp("rgb.png"), tmp("out.pgm")}, 1,
                   {"out.pgm", "one gray channel"});
    // A failed run leaves an existing output as it was.
    images::write_text(tmp("keep.png"), "precious");
    expect_failure({"convolve", "--filter", "lp3", tmp("corrupt.png"), tmp("keep.png")}, 1, {"corrupt.png"});
    CHECK(images::read_text(tmp("keep.png")) == "precious");
    for (const auto &entry : std::filesystem::directory_iterator(scratch()))
        CHECK_MSG(entry.path().filename().string().find(".tmp-") == std::string::npos,
                  "a temporary file was left behind: " + entry.path().string());
    CHECK(!std::filesystem::exists(tmp("out.bmp")) && !std::filesystem::exists(tmp("out.pgm")));
}

} // namespace

void section_bad_input() {
    make_files();
    unreadable_files();
    damaged_images();
    bad_options();
    unwritable_outputs();
}

} // namespace cli
