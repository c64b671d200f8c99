#!/bin/sh
# Regenerates the checked-in seed corpus in fuzz/seeds/ (run from anywhere).
# Each seed is: one selector byte (bit 0 = HEAD request, bits 1..7 = read-splitting mode, see
# fuzz_targets/response_parser.rs), then the bytes a server sent.
set -eu
cd "$(dirname "$0")"
rm -rf seeds
mkdir seeds
seed() { # name selector-byte-as-octal-escape payload (printf format)
    printf "$2$3" > "seeds/$1"
}
# Modes: \000 = 1-byte reads (GET), \001 = 1-byte reads (HEAD), \010 = 5-byte reads,
# \100 = two reads cut at 1/17, \142 = pseudo-random small reads, \311 = pseudo-random (HEAD).
seed content_length      '\010' 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\nServer: x\r\n\r\n0123456789'
seed content_length_zero '\142' 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'
seed chunked_ext_trailer '\000' 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1a ; a="b"\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: t\r\nY: u\r\n\r\n'
seed chunked_bare_lf     '\142' 'HTTP/1.1 200 OK\nTransfer-Encoding: gzip, chunked\n\nA\n0123456789\n0\n\n'
seed interim_1xx         '\000' 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok'
seed interim_1xx_split   '\100' 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc'
seed interim_1xx_recount '\000' 'HTTP/1.1 100\n\nH'
seed head_request        '\001' 'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nTransfer-Encoding: chunked\r\n\r\n'
seed head_pipelined      '\311' 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n'
seed no_content_204      '\010' 'HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n'
seed not_modified_304    '\142' 'HTTP/1.1 304 Not Modified\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx'
seed switching_101       '\000' 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\201\000'
seed close_delimited     '\010' 'HTTP/1.0 200 OK\r\nServer: y\r\n\r\nabcdef'
seed close_other_coding  '\142' 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcdefgh'
seed keep_alive_10       '\100' 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi'
seed connection_close    '\010' 'HTTP/1.1 200 OK\r\nConnection: foo, Close\r\nContent-Length: 2\r\n\r\nhi'
seed pipelined           '\142' 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n'
seed truncated           '\010' 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234'
seed bad_version         '\000' 'HTTX/1.1 200 OK\r\n\r\n'
seed bad_length          '\142' 'HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n'
seed conflicting_length  '\010' 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd'
seed bad_chunk_size      '\000' 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'
seed chunk_size_too_long '\142' 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n'
seed bad_chunk_crlf      '\010' 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXY0\r\n\r\n'
seed bad_header_line     '\000' 'HTTP/1.1 200 OK\r\nBad Header\r\n\r\n'
