// Listings kept between looks (rocplay/codeobj/listing_cache.hpp), on the real syncspin cubin
// and nvdisasm's listing of it (fixtures/cuda-fatbin/).
#include "rocplay/codeobj/listing_cache.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

using namespace rocplay;
namespace fs = std::filesystem;

namespace {

std::string text_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::uint8_t> bytes_of(const fs::path& path) {
  const auto text = text_of(path);
  return {text.begin(), text.end()};
}

const fs::path kFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-fatbin";

struct Home {
  fs::path dir;
  Home() {
    std::string pattern = (fs::temp_directory_path() / "rocplay-cache-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
  }
  ~Home() {
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, ec);
    fs::remove_all(dir, ec);
  }
};

// Sets an environment variable for one scope; unset (nullptr) as well.
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(std::string n, const char* value) : name(std::move(n)) {
    if (const char* o = std::getenv(name.c_str())) {
      old = o;
    }
    value ? ::setenv(name.c_str(), value, 1) : ::unsetenv(name.c_str());
  }
  ~EnvVar() { old ? ::setenv(name.c_str(), old->c_str(), 1) : ::unsetenv(name.c_str()); }
};

} // namespace

TEST_CASE("listing cache: a stored listing is found for the same bytes, decoder and arguments "
          "only") {
  Home home;
  const auto cubin = bytes_of(kFixtures / "native.cubin");
  const auto listing = text_of(kFixtures / "native.sass");
  const std::string dir = (home.dir / "a/listings").string();
  const codeobj::ListingCache cache(dir, "nvdisasm 1");

  CHECK_FALSE(cache.find(cubin, "-c", 1u << 20)); // nothing kept, no directory yet
  cache.store(cubin, "-c", listing);
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(cache.find(cubin, "-c", 1u << 20) == listing);

  CHECK_FALSE(cache.find(cubin, "-c -fun 3", 1u << 20)); // other arguments
  CHECK_FALSE(codeobj::ListingCache(dir, "nvdisasm 2").find(cubin, "-c", 1u << 20)); // updated
  CHECK_FALSE(cache.find(cubin, "-c", listing.size() - 1)); // larger than the caller takes
  auto other = cubin;
  other[other.size() / 2] ^= 1;
  CHECK_FALSE(cache.find(other, "-c", 1u << 20));
  other.pop_back();
  CHECK_FALSE(cache.find(other, "-c", 1u << 20));
}

TEST_CASE("listing cache: damaged entries are not found") {
  Home home;
  const auto cubin = bytes_of(kFixtures / "native.cubin");
  const auto listing = text_of(kFixtures / "native.sass");
  const codeobj::ListingCache cache(home.dir.string() + "/listings", "nvdisasm 1");
  cache.store(cubin, "-c", listing);
  REQUIRE(cache.find(cubin, "-c", 1u << 20));
  fs::path obj, txt;
  for (const auto& e : fs::directory_iterator(cache.dir())) {
    (e.path().extension() == ".obj" ? obj : txt) = e.path();
  }
  REQUIRE(!obj.empty());
  REQUIRE(!txt.empty());

  SECTION("a listing whose first line names another decoder") {
    auto text = text_of(txt);
    text[text.find('\t') + 1] ^= 1;
    std::ofstream(txt, std::ios::binary) << text;
    CHECK_FALSE(cache.find(cubin, "-c", 1u << 20));
  }
  SECTION("a kept object cut short") {
    fs::resize_file(obj, cubin.size() / 2);
    CHECK_FALSE(cache.find(cubin, "-c", 1u << 20));
  }
  SECTION("a kept object replaced by a link") {
    fs::remove(obj);
    fs::create_symlink(kFixtures / "native.cubin", obj);
    CHECK_FALSE(cache.find(cubin, "-c", 1u << 20));
  }
  SECTION("the listing gone") {
    fs::remove(txt);
    CHECK_FALSE(cache.find(cubin, "-c", 1u << 20));
  }
}

TEST_CASE("listing cache: a directory others may write to, or a link, is never used") {
  Home home;
  const auto cubin = bytes_of(kFixtures / "native.cubin");
  const std::string dir = (home.dir / "listings").string();
  const codeobj::ListingCache cache(dir, "nvdisasm 1");
  cache.store(cubin, "-c", "listing");
  REQUIRE(cache.find(cubin, "-c", 100) == "listing");

  fs::permissions(dir, fs::perms::others_write, fs::perm_options::add);
  CHECK_FALSE(cache.find(cubin, "-c", 100));
  cache.store(cubin, "-c -fun 1", "other");
  fs::permissions(dir, fs::perms::others_write, fs::perm_options::remove);
  CHECK_FALSE(cache.find(cubin, "-c -fun 1", 100)); // not written while it was open to others

  const std::string link = (home.dir / "link").string();
  fs::create_directory_symlink(dir, link);
  const codeobj::ListingCache through_link(link, "nvdisasm 1");
  CHECK_FALSE(through_link.find(cubin, "-c", 100));
}

TEST_CASE("listing cache: past its bound, the entries used longest ago go") {
  Home home;
  const std::string dir = (home.dir / "listings").string();
  const codeobj::ListingCache cache(dir, "nvdisasm 1", 40'000);
  const std::string listing(6'000, 'x');
  auto object = [](int i) {
    return std::vector<std::uint8_t>(1'000, static_cast<std::uint8_t>(i));
  };
  for (int i = 0; i < 5; ++i) { // 5 x 7 KB: under the bound
    cache.store(object(i), "-c", listing);
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // distinct modification times
  }
  REQUIRE(cache.find(object(0), "-c", 10'000)); // used: now the newest
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cache.store(object(5), "-c", listing); // 42 KB: pruned to at most 30 KB
  CHECK(cache.find(object(0), "-c", 10'000));
  CHECK(cache.find(object(5), "-c", 10'000));
  CHECK_FALSE(cache.find(object(1), "-c", 10'000));
  CHECK_FALSE(cache.find(object(2), "-c", 10'000));
  std::uintmax_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    total += e.file_size();
  }
  CHECK(total <= 30'000);
}

TEST_CASE("listing cache: where it lives, and turned off") {
  Home dirs;
  const std::string xdg_dir = (dirs.dir / "xdg").string();
  const std::string home_dir = (dirs.dir / "home").string();
  fs::create_directories(xdg_dir);
  fs::create_directories(home_dir);
  {
    EnvVar own("ROCPLAY_CACHE_DIR", "/srv/cache");
    CHECK(codeobj::ListingCache::default_dir() == "/srv/cache/listings");
  }
  for (const char* off : {"off", ""}) {
    EnvVar own("ROCPLAY_CACHE_DIR", off);
    CHECK_FALSE(codeobj::ListingCache::default_dir());
  }
  EnvVar own("ROCPLAY_CACHE_DIR", nullptr);
  {
    EnvVar xdg("XDG_CACHE_HOME", xdg_dir.c_str());
    CHECK(codeobj::ListingCache::default_dir() == xdg_dir + "/rocplay/listings");
  }
  EnvVar xdg("XDG_CACHE_HOME", nullptr);
  {
    EnvVar home("HOME", home_dir.c_str());
    CHECK(codeobj::ListingCache::default_dir() == home_dir + "/.cache/rocplay/listings");
  }
  {
    EnvVar home("HOME", (dirs.dir / "missing").c_str());
    CHECK_FALSE(codeobj::ListingCache::default_dir());
  }
  if (::geteuid() == 0) { // `sudo rocplay` with a user's $HOME: not there
    REQUIRE(::chown(home_dir.c_str(), 65534, 65534) == 0);
    EnvVar home("HOME", home_dir.c_str());
    CHECK_FALSE(codeobj::ListingCache::default_dir());
  }
  EnvVar home("HOME", nullptr);
  CHECK_FALSE(codeobj::ListingCache::default_dir());
}

TEST_CASE("listing cache: the decoder's identity changes with the program") {
  Home home;
  const fs::path program = home.dir / "nvdisasm";
  std::ofstream(program) << "one";
  const auto first = codeobj::decoder_identity(program.string());
  CHECK(first.find(fs::canonical(program).string()) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(program) << "other";
  CHECK(codeobj::decoder_identity(program.string()) != first);
}

TEST_CASE("listing cache: one look's turn at a time per object, given up on cancel or time") {
  Home home;
  const auto cubin = bytes_of(kFixtures / "native.cubin");
  const codeobj::ListingCache cache(home.dir.string() + "/listings", "nvdisasm 1");
  std::atomic<bool> cancel{false};
  std::optional<UniqueFd> first;
  first.emplace(cache.wait_turn(cubin, "-c", cancel, std::chrono::seconds(5)));
  REQUIRE(first->get() >= 0);
  // Another object, or other arguments: not the same turn.
  auto other = cubin;
  other[0] ^= 1;
  CHECK(cache.wait_turn(other, "-c", cancel, std::chrono::milliseconds(0)).get() >= 0);
  CHECK(cache.wait_turn(cubin, "-c -fun 1", cancel, std::chrono::milliseconds(0)).get() >= 0);

  const auto t0 = std::chrono::steady_clock::now();
  CHECK(cache.wait_turn(cubin, "-c", cancel, std::chrono::milliseconds(100)).get() < 0);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(100));
  cancel = true;
  CHECK(cache.wait_turn(cubin, "-c", cancel, std::chrono::seconds(30)).get() < 0); // at once
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  cancel = false;
  // A look that waits gets its turn when the one before gives it back.
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    const UniqueFd turn = cache.wait_turn(cubin, "-c", cancel, std::chrono::seconds(30));
    got = turn.get() >= 0;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(got);
  first.reset();
  waiter.join();
  CHECK(got);
}
