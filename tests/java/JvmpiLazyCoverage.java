/* A class loaded on one thread and linked on another (issue 34, JCov): main
 * loads Later without linking it (Class.forName(name, false, loader)), then a
 * thread "user" calls Later.twice() twice, which links and initializes it
 * there. A JVMPI VM posted Later's CLASS_LOAD at its load, on main, right
 * after its CLASS_LOAD_HOOK; JCov pairs the two on the thread and profiles
 * only paired classes. Truth: Later.twice entered 2 times, Later.<clinit>
 * once, User.run once; prints "lazy 84 JvmpiLazyCoverage$Later". (No lambda:
 * a hidden class has no CLASS_LOAD_HOOK.) */
public class JvmpiLazyCoverage {
    static class Later {
        static int base = 21;

        static int twice(int x) {
            return 2 * x + base;
        }
    }

    static class User extends Thread {
        int result;

        User() {
            super("user");
        }

        @Override
        public void run() {
            result = Later.twice(10) + Later.twice(11);
        }
    }

    public static void main(String[] args) throws Exception {
        Class<?> later = Class.forName("JvmpiLazyCoverage$Later", false, JvmpiLazyCoverage.class.getClassLoader());
        User user = new User();
        user.start();
        user.join();
        System.out.println("lazy " + user.result + " " + later.getName());
    }
}
