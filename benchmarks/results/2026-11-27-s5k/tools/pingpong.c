// two processes ping-pong one byte over pipes: round-trip wall time and CPU per round trip
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int c,char**v){int n=c>1?atoi(v[1]):20000;int a[2],b[2];pipe(a);pipe(b);char x=0;
 if(fork()==0){for(int i=0;i<n;i++){read(a[0],&x,1);write(b[1],&x,1);}_exit(0);}
 double t0=now();for(int i=0;i<n;i++){write(a[1],&x,1);read(b[0],&x,1);}double t=now()-t0;wait(NULL);
 struct rusage s,ch;getrusage(RUSAGE_SELF,&s);getrusage(RUSAGE_CHILDREN,&ch);
 double cpu=s.ru_utime.tv_sec+s.ru_utime.tv_usec*1e-6+s.ru_stime.tv_sec+s.ru_stime.tv_usec*1e-6+ch.ru_utime.tv_sec+ch.ru_utime.tv_usec*1e-6+ch.ru_stime.tv_sec+ch.ru_stime.tv_usec*1e-6;
 printf("round trip %.1f us wall, %.1f us cpu (both sides)\n",t/n*1e6,cpu/n*1e6);}
