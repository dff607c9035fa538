# cmake -DIN=trace/player.html -DOUT=<build>/generated/trace/player_html.h [-DNAME=kPlayerHtml] -P trace/embed_html.cmake
# Compiles the player page into the library (trace/html_player.cpp), so that minitorch-trace needs no
# file at run time: the page becomes one raw string literal. Written to a temporary file, then renamed.
if(NOT IN OR NOT OUT)
  message(FATAL_ERROR "embed_html.cmake: pass -DIN=page.html -DOUT=header.h")
endif()
if(NOT NAME)
  set(NAME kPlayerHtml)  # the C++ name of the page's string
endif()
file(READ "${IN}" content)
set(delim "mt_player_html")
string(FIND "${content}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${delim}\"; change it in trace/embed_html.cmake")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from ${IN} by trace/embed_html.cmake: edit the page, not this file.\n"
  "#pragma once\n"
  "namespace minitorch::trace::detail {\n"
  "inline constexpr char ${NAME}[] = R\"${delim}(${content})${delim}\";\n"
  "}  // namespace minitorch::trace::detail\n")
file(RENAME "${OUT}.tmp" "${OUT}")
