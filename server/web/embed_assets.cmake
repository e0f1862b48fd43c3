# Writes OUTPUT, a C++ file that holds each of ASSETS (comma-separated file names under
# SOURCE_DIR) as bytes with its name and content type, defining gtco::server::WebAssets()
# (server/web_assets.h): the dashboard is built into gtco-server. Run by the build whenever an asset changes:
#   cmake -DSOURCE_DIR=server/web -DOUTPUT=web_assets.cc -DASSETS=index.html,app.js -P this
cmake_minimum_required(VERSION 3.16)
foreach(required SOURCE_DIR OUTPUT ASSETS)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "embed_assets.cmake: -D${required}=... is required")
  endif()
endforeach()

string(REPLACE "," ";" ASSETS "${ASSETS}")
string(REPEAT "0x..," 16 sixteen_bytes)  # CMake's regular expressions have no {16}
set(arrays "")
set(entries "")
set(index 0)
foreach(name IN LISTS ASSETS)
  set(path "${SOURCE_DIR}/${name}")
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "embed_assets.cmake: ${path} does not exist")
  endif()
  if(name MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  elseif(name MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  elseif(name MATCHES "\\.css$")
    set(type "text/css; charset=utf-8")
  elseif(name MATCHES "\\.svg$")
    set(type "image/svg+xml")
  else()
    message(FATAL_ERROR "embed_assets.cmake: no content type known for ${name}")
  endif()
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  # Sixteen bytes a line; a trailing 0 keeps an empty file's array legal (not counted in size).
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(${sixteen_bytes})" "\\1\n    " bytes "${bytes}")
  string(APPEND arrays "// ${name}\nconst unsigned char kAsset${index}[] = {\n    ${bytes}0};\n")
  string(APPEND entries
         "      {\"${name}\", \"${type}\", std::string_view(reinterpret_cast<const char*>(kAsset${index}), ${size})},\n")
  math(EXPR index "${index} + 1")
endforeach()

set(text "// Generated from server/web/ by server/web/embed_assets.cmake at build time: do not edit.
#include \"server/web_assets.h\"

namespace gtco::server {
namespace {

${arrays}
}  // namespace

const std::vector<WebAsset>& WebAssets() {
  static const std::vector<WebAsset>* const kAssets = new std::vector<WebAsset>{
${entries}  };
  return *kAssets;
}

}  // namespace gtco::server
")
file(WRITE "${OUTPUT}" "${text}")
