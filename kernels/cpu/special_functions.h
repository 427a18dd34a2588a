// Special functions for the Lgamma, Digamma and Polygamma kernels, in double (the kernels of
// float, half and bfloat16 compute in it and round): the digamma function and the Hurwitz zeta
// function, from which polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1.
//
// Both shift x upwards with their recurrences until an asymptotic series converges to double
// precision (as Cephes' psi and zeta do): digamma(x) = digamma(x+1) - 1/x until x >= 10, then
// log(x) - 1/(2x) - sum B_2k / (2k x^2k); zeta(s, x) = x^-s + zeta(s, x+1) until x >= 9 and
// at least 9 terms are summed, then the Euler-Maclaurin tail with 12 Bernoulli terms. Negative x
// uses the reflection digamma(x) = digamma(1-x) - pi / tan(pi x) (digamma) or the recurrence
// alone (zeta, integer s). Poles (x a non-positive integer) give NaN, as non-integer or negative
// orders of polygamma do.
#ifndef SHARDFLOW_KERNELS_CPU_SPECIAL_FUNCTIONS_H_
#define SHARDFLOW_KERNELS_CPU_SPECIAL_FUNCTIONS_H_

#include <cmath>
#include <limits>

namespace shardflow {
namespace special {

inline double Digamma(double x) {
  constexpr double kPi = 3.14159265358979323846;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(x) || x == -std::numeric_limits<double>::infinity()) return nan;
  if (x == std::numeric_limits<double>::infinity()) return x;
  double reflection = 0;
  if (x <= 0) {
    if (x == std::floor(x)) return nan;  // a pole
    reflection = -kPi / std::tan(kPi * x);
    x = 1 - x;
  }
  double shift = 0;
  while (x < 10) {
    shift -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  // B_2k / (2k): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12.
  const double tail =
      z * (1.0 / 12 -
           z * (1.0 / 120 -
                z * (1.0 / 252 -
                     z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z * (1.0 / 12)))))));
  return reflection + shift + std::log(x) - 0.5 / x - tail;
}

// zeta(s, x) = sum over k >= 0 of (x + k)^-s, for s > 1.
inline double HurwitzZeta(double s, double x) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(s) || std::isnan(x) || !(s > 1)) return nan;
  if (x <= 0) {
    if (x == std::floor(x)) return std::numeric_limits<double>::infinity();  // a pole
    if (s != std::floor(s)) return nan;  // (x + k)^-s of a negative base: not real
  }
  // (2k)! / B_2k for k = 1..12.
  static constexpr double kA[12] = {
      12.0,
      -720.0,
      30240.0,
      -1209600.0,
      47900160.0,
      -1.8924375803183791606e9,
      7.47242496e10,
      -2.950130727918164224e12,
      1.1646782814350067249e14,
      -4.5979787224074726105e15,
      1.8152105401943546773e17,
      -7.1661652561756670113e18,
  };
  constexpr double kEps = 1.11022302462515654042e-16;
  double a = x;
  double sum = std::pow(a, -s);
  double b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -s);
    sum += b;
    if (std::fabs(b / sum) < kEps) return sum;
  }
  const double w = a;
  sum += b * w / (s - 1);
  sum -= 0.5 * b;
  double factor = 1;
  double k = 0;
  for (int j = 0; j < 12; ++j) {
    factor *= s + k;
    b /= w;
    const double t = factor * b / kA[j];
    sum += t;
    if (std::fabs(t / sum) < kEps) break;
    k += 1;
    factor *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

// The n-th derivative of digamma at x; n must be a non-negative integer (else NaN).
inline double Polygamma(double n, double x) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(n) || n < 0 || n != std::floor(n)) return nan;
  if (n == 0) return Digamma(x);
  if (x <= 0 && x == std::floor(x)) return nan;  // a pole
  // (-1)^(n+1) n! = (-1)^(n+1) exp(lgamma(n + 1)).
  const double sign = std::fmod(n, 2.0) == 0 ? -1.0 : 1.0;
  return sign * std::exp(std::lgamma(n + 1)) * HurwitzZeta(n + 1, x);
}

}  // namespace special
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_SPECIAL_FUNCTIONS_H_
