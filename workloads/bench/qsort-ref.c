/* The qsbench sort (median-of-three quicksort, Hoare partition) in C, only
   to compare speeds: gcc -O2 -o qsort-ref qsort-ref.c; ./qsort-ref 200 */
#include <stdio.h>
#include <stdlib.h>
static void qs(int *a, long n) {
  while (n > 1) {
    long l = 0, m = (n-1)/2, r = n-1; int t;
    if (a[m] < a[l]) { t=a[m]; a[m]=a[l]; a[l]=t; }
    if (a[r] < a[l]) { t=a[r]; a[r]=a[l]; a[l]=t; }
    if (a[r] < a[m]) { t=a[r]; a[r]=a[m]; a[m]=t; }
    if (n <= 3) return;
    t=a[m]; a[m]=a[r-1]; a[r-1]=t; int v = a[r-1];
    long i = l, j = r-1;
    for (;;) { while (a[++i] < v); while (a[--j] > v); if (i >= j) break; t=a[i]; a[i]=a[j]; a[j]=t; }
    t=a[i]; a[i]=a[r-1]; a[r-1]=t;
    if (i < n-i-1) { qs(a, i); a += i+1; n = n-i-1; } else { qs(a+i+1, n-i-1); n = i; }
  }
}
int main(int c, char **v) { long n = atol(v[1]) * 1048576 / 4; int *a = malloc(n*4); srand(1); for (long i=0;i<n;i++) a[i]=rand(); qs(a,n); for (long i=1;i<n;i++) if (a[i-1]>a[i]) { printf("ERR\n"); return 1;} return 0; }
