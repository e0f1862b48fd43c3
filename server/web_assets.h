// The dashboard's files (server/web/), built into gtco-server: the generated web_assets.cc
// (server/web/embed_assets.cmake) defines WebAssets(), so the binary serves its pages with no
// file beside it and nothing fetched from elsewhere.
#pragma once

#include <string_view>
#include <vector>

namespace gtco::server {

/// One embedded file.
struct WebAsset {
  std::string_view name;          ///< its file name under server/web/, e.g. "app.js"
  std::string_view content_type;  ///< e.g. "text/javascript; charset=utf-8"
  std::string_view content;
};

/// Every embedded file, by name. The views point into static storage.
const std::vector<WebAsset>& WebAssets();

}  // namespace gtco::server
