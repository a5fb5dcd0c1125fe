/* A tiny consumer of the nvfp4 C ABI: version, one CPU gemm with a known answer,
 * and an invalid call checked through its status and nvfp4_last_error().
 * Prints one line per check; exits 0 only when every check holds. */
#include <nvfp4/nvfp4.h>

#include <stdio.h>
#include <string.h>

static nvfp4_tensor_t host_tensor(void* data, nvfp4_dtype_t dtype, int64_t rows, int64_t cols) {
  nvfp4_tensor_t t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = dtype;
  t.device_type = NVFP4_DEVICE_CPU;
  t.ndim = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.strides[0] = cols;
  t.strides[1] = 1;
  return t;
}

int main(void) {
  int failures = 0;
  printf("version %s\n", nvfp4_version());

  /* C (2x2) = alpha * A (2x32) * B (2x32)^T with K = 32: 16 bytes and 2 scales per row.
   *   A row 0: e2m1 code 2 (1.0) everywhere, scale 1.0 (0x38)          -> all 1.0
   *   A row 1: code 3 (1.5) everywhere, scale 2.0 (0x40)               -> all 3.0
   *   B row 0: code 2 (1.0), scale 1.0                                 -> all 1.0
   *   B row 1: even elements code 7 (6.0), odd code 9 (-0.5); scale 0.5 (0x30)
   *            -> 3.0, -0.25, 3.0, -0.25, ...
   * A*B^T = [[32, 44], [96, 132]]; alpha = 0.5 -> [[16, 22], [48, 66]]. */
  unsigned char a[2][16], b[2][16], sfa[2][2], sfb[2][2];
  memset(a[0], 0x22, 16);
  memset(a[1], 0x33, 16);
  memset(b[0], 0x22, 16);
  memset(b[1], 0x97, 16); /* low nibble (even element) 7, high nibble 9 */
  sfa[0][0] = sfa[0][1] = 0x38;
  sfa[1][0] = sfa[1][1] = 0x40;
  sfb[0][0] = sfb[0][1] = 0x38;
  sfb[1][0] = sfb[1][1] = 0x30;
  float c[2][2] = {{-1.0f, -1.0f}, {-1.0f, -1.0f}};

  nvfp4_tensor_t ta = host_tensor(a, NVFP4_DTYPE_UINT8, 2, 16);
  nvfp4_tensor_t tb = host_tensor(b, NVFP4_DTYPE_UINT8, 2, 16);
  nvfp4_tensor_t tsa = host_tensor(sfa, NVFP4_DTYPE_E4M3, 2, 2);
  nvfp4_tensor_t tsb = host_tensor(sfb, NVFP4_DTYPE_E4M3, 2, 2);
  nvfp4_tensor_t tc = host_tensor(c, NVFP4_DTYPE_FLOAT32, 2, 2);
  nvfp4_scalar_t alpha = {0.5f, NULL};
  nvfp4_exec_t exec;
  memset(&exec, 0, sizeof exec);

  nvfp4_status_t st = nvfp4_gemm(&ta, &tsa, &tb, &tsb, alpha, NVFP4_SF_LINEAR, &tc, &exec);
  printf("gemm status %d: %g %g %g %g\n", (int)st, c[0][0], c[0][1], c[1][0], c[1][1]);
  if (st != NVFP4_SUCCESS || c[0][0] != 16.0f || c[0][1] != 22.0f || c[1][0] != 48.0f || c[1][1] != 66.0f) {
    printf("FAIL gemm\n");
    ++failures;
  }

  /* Invalid: b with K = 64 against a with K = 32. Must fail and leave c untouched. */
  unsigned char b_wide[2][32], sfb_wide[2][4];
  memset(b_wide, 0x22, sizeof b_wide);
  memset(sfb_wide, 0x38, sizeof sfb_wide);
  nvfp4_tensor_t tbw = host_tensor(b_wide, NVFP4_DTYPE_UINT8, 2, 32);
  nvfp4_tensor_t tsbw = host_tensor(sfb_wide, NVFP4_DTYPE_UINT8, 2, 4);
  c[0][0] = 7.0f;
  st = nvfp4_gemm(&ta, &tsa, &tbw, &tsbw, alpha, NVFP4_SF_LINEAR, &tc, &exec);
  const char* msg = nvfp4_last_error();
  printf("invalid status %d (%s): %s\n", (int)st, nvfp4_status_string(st), msg);
  if (st != NVFP4_ERROR_INVALID_VALUE || strstr(msg, "K mismatch") == NULL || c[0][0] != 7.0f) {
    printf("FAIL invalid call\n");
    ++failures;
  }

  /* A successful call clears the message. */
  st = nvfp4_gemm(&ta, &tsa, &tb, &tsb, alpha, NVFP4_SF_LINEAR, &tc, &exec);
  if (st != NVFP4_SUCCESS || nvfp4_last_error()[0] != '\0') {
    printf("FAIL last_error not cleared: '%s'\n", nvfp4_last_error());
    ++failures;
  }
  printf("devices %d\n", (int)nvfp4_device_count());
  printf(failures ? "FAILED %d\n" : "ALL OK\n", failures);
  return failures ? 1 : 0;
}
