// A minimal blocking HTTP/1.0 GET over a plain loopback TCP socket, for tests.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <string>

namespace gtco::metrics::testing {

struct HttpResponse {
  int status = 0;                              ///< 0 when the connection failed
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;
};

/// Sends `method path` to 127.0.0.1:`port` and reads until the server closes the connection.
inline HttpResponse HttpRequest(int port, const std::string& path,
                                const std::string& method = "GET") {
  HttpResponse response;
  const int socket_fd = socket(AF_INET, SOCK_STREAM, 0);
  if (socket_fd < 0) return response;
  sockaddr_in server_address{};
  server_address.sin_family = AF_INET;
  server_address.sin_port = htons(static_cast<uint16_t>(port));
  server_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(socket_fd, reinterpret_cast<sockaddr*>(&server_address), sizeof(server_address)) !=
      0) {
    close(socket_fd);
    return response;
  }
  const std::string request =
      method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(socket_fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(socket_fd);
    return response;
  }
  std::string raw;
  char buffer[8192];
  ssize_t received = 0;
  while ((received = recv(socket_fd, buffer, sizeof(buffer), 0)) > 0) raw.append(buffer, received);
  close(socket_fd);

  const size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos || raw.compare(0, 5, "HTTP/") != 0) return response;
  response.status = std::stoi(raw.substr(raw.find(' ') + 1, 3));
  size_t line_begin = raw.find("\r\n") + 2;
  while (line_begin < header_end) {
    const size_t line_end = raw.find("\r\n", line_begin);
    const std::string line = raw.substr(line_begin, line_end - line_begin);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t value_begin = colon + 1;
      while (value_begin < line.size() && line[value_begin] == ' ') ++value_begin;
      response.headers[name] = line.substr(value_begin);
    }
    line_begin = line_end + 2;
  }
  response.body = raw.substr(header_end + 4);
  return response;
}

}  // namespace gtco::metrics::testing
