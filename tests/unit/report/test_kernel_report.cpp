// Kernel-info reports (text and JSON) over the real code objects of tests/codeobj/; the JSON
// holds exactly the keys docs/json-schema.md documents.
#include "rocplay/codeobj/kernel_info.hpp"
#include "rocplay/report/kernel_report.hpp"
#include "schema_doc.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

using namespace rocplay;
using namespace rocplay::codeobj;

TEST_CASE("the ASCII fit view stays within 100 columns and says it is not occupancy") {
  KernelInfoRequest req;
  req.inputs = {std::string(ROCPLAY_SOURCE_DIR) + "/tests/codeobj/kernels.hsaco"};
  req.archs = {"gfx90a", "gfx942", "gfx950", "gfx1030", "gfx11", "gfx12"};
  req.pc = 0x5210;
  const auto info = kernel_info(req);
  CHECK(info.kernels.size() == 10);
  std::ostringstream out;
  report::write_kernel_info_text(out, info, true);
  std::istringstream lines(out.str());
  std::string line;
  std::size_t n = 0;
  while (std::getline(lines, line)) {
    ++n;
    INFO(line);
    CHECK(line.size() <= 100);
  }
  CHECK(n > 100);
  CHECK(out.str().find("ISA fit on gfx942 (CDNA3, wave64), not measured occupancy") !=
        std::string::npos);
  const auto j = report::kernel_info_to_json(info);
  CHECK(j["schema"] == "rocplay.kernel-info");
  CHECK(j["objects"].size() == 2);
  CHECK(j["objects"][0]["kernels"][0]["fits"].size() == 6);
  CHECK(j["objects"][0]["kernels"][0]["fits"][0]["note"] ==
        "ISA fit from code-object metadata, not measured occupancy");
  CHECK(j["windows"].size() == 2);
  // The streamed JSON the CLI writes is the same document.
  std::ostringstream streamed;
  report::write_kernel_info_json(streamed, info);
  CHECK(nlohmann::json::parse(streamed.str()) == j);
  codeobj::KernelInfo empty; // not rocplay::KernelInfo (a kernel name classified)
  std::ostringstream none;
  report::write_kernel_info_json(none, empty);
  CHECK(nlohmann::json::parse(none.str()) == report::kernel_info_to_json(empty));
}

TEST_CASE("rocplay.kernel-info holds exactly the keys docs/json-schema.md documents",
          "[report][schema]") {
  KernelInfoRequest req;
  req.inputs = {std::string(ROCPLAY_SOURCE_DIR) + "/tests/codeobj/kernels.hsaco",
                std::string(ROCPLAY_SOURCE_DIR) + "/tests/codeobj/no-such-object.hsaco"};
  req.archs = {"gfx90a", "gfx1030"};
  req.pc = 0x5210;
  const auto j = report::kernel_info_to_json(kernel_info(req));
  REQUIRE(j["problems"].size() == 1);
  const auto keys = rocplay::testing::documented_keys("(`rocplay.kernel-info`)");
  CHECK(rocplay::testing::emitted_keys({j}, keys) == keys);
  std::vector<nlohmann::json> objects;
  std::vector<nlohmann::json> kernels;
  for (const auto& object : j["objects"]) {
    objects.push_back(object);
    kernels.insert(kernels.end(), object["kernels"].begin(), object["kernels"].end());
  }
  const auto object_keys = rocplay::testing::documented_keys("A code object");
  CHECK(rocplay::testing::emitted_keys(objects, object_keys) == object_keys);
  const auto kernel_keys = rocplay::testing::documented_keys("A kernel");
  CHECK(rocplay::testing::emitted_keys(kernels, kernel_keys) == kernel_keys);
}
