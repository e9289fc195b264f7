// A clock_nanosleep of argv[1] ns with a timer slack of 1 ns, 2,000 times: p50/p90/p99 of the time it took.
// gcc -O2 -o slp slp.c && ./slp 5000
#include <stdio.h>
#include <time.h>
#include <sys/prctl.h>
#include <stdlib.h>
static long ns(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
int main(int c,char**v){long req=atol(v[1]); prctl(PR_SET_TIMERSLACK,1);
 long tot=0,mx=0; int n=2000; long a[2000];
 for(int i=0;i<n;i++){struct timespec t={0,req}; long s=ns(); clock_nanosleep(CLOCK_MONOTONIC,0,&t,NULL); long d=ns()-s; a[i]=d; tot+=d;}
 // sort
 for(int i=0;i<n;i++)for(int j=i+1;j<n;j++)if(a[j]<a[i]){long x=a[i];a[i]=a[j];a[j]=x;}
 printf("req %ld ns: p50 %ld p90 %ld p99 %ld\n",req,a[n/2],a[n*9/10],a[n*99/100]);}
