#include "jobboard.h"
#include <stdio.h>
int main(void) { printf("%s\n", jb_version(NULL, NULL, NULL)); return 0; }
