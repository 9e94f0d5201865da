// SPDX-License-Identifier: MIT
// fmt's compiled part, for the static supervisor (build/cdi/bonsaictl, the Makefile):
// Debian ships libfmt only as a shared library, so fmt's own source -- the definitions
// in format-inl.h and the instantiations of fmt 9's src/format.cc -- is compiled here
// into the one program that may load no library of the host's.
#include <fmt/format-inl.h>

#if FMT_VERSION / 10000 != 9
#error "sv_fmt.cc follows fmt 9's src/format.cc: follow this fmt's, or build the supervisor with FMT_HEADER_ONLY"
#endif

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
#ifndef FMT_STATIC_THOUSANDS_SEPARATOR
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
