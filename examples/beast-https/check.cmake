# The beast-https test (ctest): a self-signed certificate for localhost, then the program in
# drive mode and with the io_context on its own thread; each must print the body 3 times.
# Inputs: OPENSSL (the tool), PROGRAM, DIR (where the certificate goes).
set(cert "${DIR}/beast-https-cert.pem")
set(key "${DIR}/beast-https-key.pem")
execute_process(
  COMMAND "${OPENSSL}" req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost
          -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "${key}" -out "${cert}"
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "openssl req failed:\n${err}")
endif()
set(expected "hello from spool\nhello from spool\nhello from spool\n")
foreach(mode IN ITEMS "" "--own-thread")
  execute_process(COMMAND "${PROGRAM}" "${cert}" "${key}" ${mode}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out STREQUAL expected)
    message(FATAL_ERROR "spool-beast-https ${mode}: exit ${rc}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
endforeach()
message(STATUS "spool-beast-https: 3 verified HTTPS requests, in drive mode and on its own thread")
