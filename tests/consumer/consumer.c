#include <gpufeed.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  /* The header and the library agree, and the error table is reachable. */
  if (gf_version() != GF_VERSION_NUMBER) {
    fprintf(stderr, "header %d, library %u\n", GF_VERSION_NUMBER, gf_version());
    return 1;
  }
  if (strcmp(gf_err_name(GF_ECORRUPT), "GF_ECORRUPT") != 0)
    return 1;
  printf("consumer linked gpufeed %s\n", gf_version_string());
  return 0;
}
