// An HTTPS server and client with Boost.Beast on spool tasks, through spool::asio (docs/asio.md).
//
//   spool-beast-https CERT KEY [--own-thread] [--requests N]
//
// Serves GET /hello over TLS on 127.0.0.1 (a free port) with CERT and KEY (PEM), and fetches
// it N times (default 3), each on a new connection that verifies the server's certificate
// against CERT (self-signed, for "localhost") and its host name. Each connection is a spool
// task awaiting Beast's and Asio's operations with spool::asio::use_task. By default one
// thread runs everything: spool::asio::drive runs the io_context between the tasks' polls.
// --own-thread runs the io_context on a thread of its own (spool::asio::run) and the tasks on a
// spool runtime's workers. Prints each reply's body; exits 1 on any error.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "spool/asio.hpp"
#include "spool/spool.hpp"

namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using spool::Task;
using spool::asio::use_task;

using TlsSocket = ssl::stream<tcp::socket>;

// Ends a TLS connection with close_notify. A peer that closed first makes Asio say eof or
// "stream truncated": both mean the connection is over, as Beast's examples treat them.
Task<void> close_tls(TlsSocket& stream) {
  try {
    co_await stream.async_shutdown(use_task);
  } catch (const boost::system::system_error& e) {
    if (e.code() != net::error::eof && e.code() != ssl::error::stream_truncated) throw;
  }
}

// One server connection: the handshake, one request, one reply, close_notify.
Task<void> serve(tcp::socket socket, ssl::context& tls) {
  TlsSocket stream(std::move(socket), tls);
  co_await stream.async_handshake(ssl::stream_base::server, use_task);
  boost::beast::flat_buffer buffer;
  http::request<http::string_body> request;
  co_await http::async_read(stream, buffer, request, use_task);
  http::response<http::string_body> response{http::status::ok, request.version()};
  response.set(http::field::content_type, "text/plain");
  if (request.target() == "/hello") {
    response.body() = "hello from spool";
  } else {
    response.result(http::status::not_found);
    response.body() = "no such page";
  }
  response.prepare_payload();
  co_await http::async_write(stream, response, use_task);
  co_await close_tls(stream);
}

// Accepts `connections` connections, serving each before the next.
Task<void> server(tcp::acceptor& acceptor, ssl::context& tls, int connections) {
  for (int i = 0; i < connections; ++i) {
    tcp::socket socket = co_await acceptor.async_accept(use_task);
    co_await serve(std::move(socket), tls);
  }
}

// GET /hello over a new, verified connection to `at`.
Task<std::string> fetch(net::any_io_executor executor, ssl::context& tls, tcp::endpoint at) {
  TlsSocket stream(executor, tls);
  if (!SSL_set_tlsext_host_name(stream.native_handle(), "localhost")) {
    throw boost::system::system_error(static_cast<int>(::ERR_get_error()),
                                      net::error::get_ssl_category(), "SNI");
  }
  stream.set_verify_mode(ssl::verify_peer);
  stream.set_verify_callback(ssl::host_name_verification("localhost"));
  co_await stream.next_layer().async_connect(at, use_task);
  co_await stream.async_handshake(ssl::stream_base::client, use_task);
  http::request<http::empty_body> request{http::verb::get, "/hello", 11};
  request.set(http::field::host, "localhost");
  co_await http::async_write(stream, request, use_task);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  co_await http::async_read(stream, buffer, response, use_task);
  co_await close_tls(stream);
  if (response.result() != http::status::ok) {
    throw std::runtime_error("GET /hello: status " + std::to_string(response.result_int()));
  }
  co_return response.body();
}

// The clients, one after another.
Task<std::vector<std::string>> clients(net::any_io_executor executor, ssl::context& tls,
                                       tcp::endpoint at, int requests) {
  std::vector<std::string> bodies;
  for (int i = 0; i < requests; ++i) bodies.push_back(co_await fetch(executor, tls, at));
  co_return bodies;
}

struct Options {
  std::string cert;
  std::string key;
  bool own_thread = false;
  int requests = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string_view> positional;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--own-thread") {
      o.own_thread = true;
    } else if (a == "--requests" && i + 1 < argc) {
      o.requests = std::atoi(argv[++i]);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2 || o.requests < 1) {
    throw std::invalid_argument("usage: spool-beast-https CERT KEY [--own-thread] [--requests N]");
  }
  o.cert = positional[0];
  o.key = positional[1];
  return o;
}

int run(const Options& o) {
  ssl::context server_tls(ssl::context::tls_server);
  server_tls.use_certificate_chain_file(o.cert);
  server_tls.use_private_key_file(o.key, ssl::context::pem);
  ssl::context client_tls(ssl::context::tls_client);
  client_tls.load_verify_file(o.cert);

  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  const tcp::endpoint at = acceptor.local_endpoint();
  auto both = [&] {
    return spool::when_all(server(acceptor, server_tls, o.requests),
                           clients(io.get_executor(), client_tls, at, o.requests));
  };

  std::vector<std::string> bodies;
  if (!o.own_thread) {
    bodies = std::get<1>(spool::asio::drive(io, both()));
  } else {
    auto guard = net::make_work_guard(io);
    std::thread io_thread([&io] { spool::asio::run(io); });
    try {
      spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
      bodies = std::get<1>(rt.block_on(both()));
    } catch (...) {
      io.stop();
      io_thread.join();
      throw;
    }
    guard.reset();
    io_thread.join();
  }
  for (const auto& body : bodies) std::cout << body << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "spool-beast-https: " << e.what() << "\n";
    return 1;
  }
}
