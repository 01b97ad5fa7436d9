/* Placeholder: the CLI lands with the tools work. */
#include "gpufeed.h"
#include <stdio.h>
int main(void) {
  printf("gpufeed %s\n", gf_version_string());
  return 0;
}
